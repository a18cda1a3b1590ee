"""Official documents as PDFs: notice of decision, statement of account; their verification."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path, Query, Response

from assessment.accounts import repository as accounts_repo
from assessment.accounts.endpoints import AsOf
from assessment.cases import service as cases
from assessment.cases.endpoints import CaseDep
from assessment.deps import FactsDep, SettingsDep
from assessment.documents import service
from assessment.documents.service import Rendered
from servicekit.app import router as make_router
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1", tags=["documents"])
PDF = {200: {"content": {"application/pdf": {}}}, **NotFound.openapi()}
Lang = Annotated[
    Literal["en", "es"] | None,
    Query(
        description="the document's language; default: the lodging's preferred language, else the "
        "jurisdiction's (PR Spanish, VI English)"
    ),
]


def pdf_response(doc: Rendered) -> Response:
    return Response(
        content=doc.pdf,
        media_type="application/pdf",
        headers={
            "Content-Disposition": f'inline; filename="{doc.filename}"',
            "Content-Language": doc.language,
        },
    )


@router.get(
    "/cases/{case_id}/decision.pdf",
    response_class=Response,
    responses={**PDF, **Conflict.openapi()},
    summary="The notice of decision (PDF): outcome, recomputed balance, appeal deadline, how to pay",
)
async def decision_letter(
    case: CaseDep, session: SessionDep, settings: SettingsDep, runtime: RuntimeDep, lang: Lang = None
) -> Response:
    today = runtime.today()
    current = await cases.view(session, case=case, on=today)
    if current.decision is None:
        raise Conflict(
            f"the case is {current.status}: a notice of decision exists once it is decided",
            errors=[{"pointer": "#/case/status", "detail": f"the case is {current.status}"}],
        )
    facts = await accounts_repo.load_facts(session, case.tax_account)
    if facts is None:  # pragma: no cover - a case exists for a known account
        raise NotFound(f"no case {case.id!r}")
    return pdf_response(
        service.decision_letter(facts, current, settings=settings, printed_on=today, requested=lang)
    )


@router.get(
    "/accounts/{tax_account}/statement.pdf",
    response_class=Response,
    responses=PDF,
    summary="The statement of account (PDF) as of any date",
)
async def statement_document(
    facts: FactsDep, settings: SettingsDep, runtime: RuntimeDep, as_of: AsOf = None, lang: Lang = None
) -> Response:
    today = runtime.today()
    return pdf_response(
        service.statement_document(
            facts, as_of=as_of or today, settings=settings, printed_on=today, requested=lang
        )
    )


@router.get(
    "/documents/verify/{kind}/{subject}",
    responses=NotFound.openapi(),
    summary="Check a printed document's verification code (no token needed: the code is the proof)",
)
async def verify_document(
    settings: SettingsDep,
    kind: Annotated[str, Path(max_length=20)],
    subject: Annotated[str, Path(max_length=200)],
    code: Annotated[str, Query(min_length=1, max_length=40)],
) -> dict[str, object]:
    if not service.verified(settings, kind, subject, code):
        raise NotFound("no document with this verification code")
    return {"valid": True, "kind": kind, "subject": subject}
