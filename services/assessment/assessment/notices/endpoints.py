from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Depends, Path, Query
from fastapi.responses import Response

from assessment import law
from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts
from assessment.accounts.service import recompute
from assessment.cases import service as cases_service
from assessment.deps import SettingsDep
from assessment.documents import service as documents
from assessment.documents.endpoints import Lang, pdf_response
from assessment.models import Notice
from assessment.notices import repository, service
from assessment.notices.schemas import NoticeCreate, NoticeOut, ResponseCreate
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, Principal, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/notices", tags=["notices"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi()}


async def _visible_notice(session: SessionDep, principal: Principal, notice_id: str) -> tuple[Notice, Facts]:
    notice = await repository.notice(session, notice_id)
    facts = await accounts_repo.load_facts(session, notice.tax_account) if notice else None
    if notice is None or facts is None or not accounts_repo.visible(principal, facts.lodging):
        raise NotFound(f"no notice {notice_id!r}")
    return notice, facts


async def get_visible_notice(
    session: SessionDep, principal: PrincipalDep, notice_id: Annotated[str, Path()]
) -> tuple[Notice, Facts]:
    return await _visible_notice(session, principal, notice_id)


NoticeDep = Annotated[tuple[Notice, Facts], Depends(get_visible_notice)]


async def to_out(session: SessionDep, notice: Notice, facts: Facts, today: date) -> NoticeOut:
    standing = await service.status_of(session, facts=facts, notice=notice, on=today)
    decided = await cases_service.notice_outcome(session, notice_id=notice.id, on=today)
    term = law.cited(law.NOTICE_RESPONSE_DAYS, notice.jurisdiction, law=facts.law)
    return NoticeOut.of(notice, term, standing, decided)


@router.post(
    "",
    status_code=201,
    responses=ERRORS,
    summary="Notify a deficiency (PR §2(25), §33) with the amounts owed on its date",
)
async def create_notice(
    body: NoticeCreate, session: SessionDep, principal: AdminDep, runtime: RuntimeDep
) -> NoticeOut:
    issued_on = body.issued_on or runtime.today()
    if issued_on > runtime.today():
        raise ValidationFailed.on("issued_on", "is in the future")
    await accounts_repo.lock_account(session, body.tax_account)
    facts = await accounts_repo.load_facts(session, body.tax_account)
    if facts is None:
        raise ValidationFailed.on("tax_account", "no account with this number")
    notice = await service.issue_notice(
        session,
        facts=facts,
        period=body.period,
        kind="deficiency",
        reason=body.reason,
        issued_on=issued_on,
        issued_by=principal.client_id,
    )
    assert notice is not None
    refreshed = await recompute(session, tax_account=body.tax_account)
    return await to_out(session, notice, refreshed or facts, runtime.today())


@router.get("", summary="Notices visible to the caller")
async def list_notices(
    session: SessionDep,
    principal: PrincipalDep,
    runtime: RuntimeDep,
    tax_account: Annotated[str | None, Query()] = None,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
) -> Page[NoticeOut]:
    after = decode_cursor(cursor, arity=2)
    rows = await repository.visible_page(
        session, principal, tax_account=tax_account, limit=limit, after=after
    )
    facts_cache: dict[str, Facts] = {}
    items: list[NoticeOut] = []
    for n in rows[:limit]:
        if n.tax_account not in facts_cache:
            f = await accounts_repo.load_facts(session, n.tax_account)
            assert f is not None
            facts_cache[n.tax_account] = f
        items.append(await to_out(session, n, facts_cache[n.tax_account], runtime.today()))
    page = paginate(
        list(rows), limit=limit, key=lambda n: [n.issued_on.isoformat(), n.id], to_item=lambda n: n
    )
    return Page[NoticeOut](items=items, next_cursor=page.next_cursor)


@router.get("/{notice_id}", responses=ERRORS, summary="A notice and its status")
async def get_notice(found: NoticeDep, session: SessionDep, runtime: RuntimeDep) -> NoticeOut:
    return await to_out(session, *found, runtime.today())


@router.get(
    "/{notice_id}/letter.pdf",
    responses={200: {"content": {"application/pdf": {}}}, **ERRORS},
    response_class=Response,
    summary="The notice letter (PDF)",
)
async def get_letter(
    found: NoticeDep, settings: SettingsDep, runtime: RuntimeDep, lang: Lang = None
) -> Response:
    notice, facts = found
    return pdf_response(
        documents.notice_letter(facts, notice, settings=settings, printed_on=runtime.today(), requested=lang)
    )


@router.post(
    "/{notice_id}/responses",
    status_code=201,
    responses={**ERRORS, **Forbidden.openapi()},
    summary="Accept the notice, or dispute part of it with the undisputed part paid (PR §34)",
)
async def respond(
    body: ResponseCreate, found: NoticeDep, session: SessionDep, principal: PrincipalDep, runtime: RuntimeDep
) -> NoticeOut:
    notice, facts = found
    if not (principal.can_write_all or principal.role == "operator"):
        raise Forbidden("only the taxpayer (operator) or the agency administrator answers a notice")
    response = await service.respond(
        session,
        facts=facts,
        notice=notice,
        kind=body.kind,
        disputed_amount=body.disputed_amount,
        statement=body.statement,
        responded_on=body.responded_on or runtime.today(),
        responder=principal.client_id,
        today=runtime.today(),
    )
    if response.kind == "dispute":  # a dispute opens a case (assessment.cases)
        await cases_service.open_case(
            session, facts=facts, notice=notice, response=response, by=principal.actor
        )
    return await to_out(session, notice, facts, runtime.today())
