"""Audits: agency staff open and work them; the lodging's operator sees its own (404 for others)."""

from __future__ import annotations

from datetime import date
from functools import partial
from typing import Annotated, Protocol

from fastapi import Depends, Path, Query
from fastapi.responses import Response

from assessment.accounts import repository as accounts
from assessment.audits import letter, repository, service
from assessment.audits.models import Audit
from assessment.audits.schemas import (
    AuditClose,
    AuditCreate,
    AuditFindingCreate,
    AuditOut,
    ProposedOut,
    RecordsLetter,
    RecordsRequestCreate,
)
from assessment.deps import CaseWork, SettingsDep, WorkDep
from assessment.documents import service as documents
from assessment.documents.endpoints import Lang, pdf_response
from assessment.models import LodgingView
from servicekit.app import router as make_router
from servicekit.auth import Principal, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/audits", tags=["audits"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def _may_see(session: SessionDep, principal: Principal, tax_account: str) -> bool:
    return accounts.visible(principal, await session.get(LodgingView, tax_account))


async def get_audit(
    session: SessionDep, principal: PrincipalDep, audit_id: Annotated[str, Path()]
) -> service.AuditView:
    audit = await session.get(Audit, audit_id)
    if audit is None or not await _may_see(session, principal, audit.tax_account):
        raise service.not_found(audit_id)
    return await service.view(session, audit=audit)


AuditDep = Annotated[service.AuditView, Depends(get_audit)]


class AuditWork(Protocol):
    """A step of working an audit (``service.request_records``, ``record_finding``, ...)."""

    async def __call__(
        self, session: SessionDep, *, current: service.AuditView, principal: Principal, today: date
    ) -> object: ...


async def _worked(current: service.AuditView, w: CaseWork, step: AuditWork) -> AuditOut:
    """The step, today, by the caller; then the audit as it now stands."""
    await step(w.session, current=current, principal=w.principal, today=w.today)
    return AuditOut.of(await service.view(w.session, audit=current.audit))


@router.post("", status_code=201, responses=ERRORS, summary="Open an audit (agency-admin)")
async def open_audit(
    body: AuditCreate, session: SessionDep, principal: PrincipalDep, runtime: RuntimeDep
) -> AuditOut:
    audit = await service.open_audit(
        session, principal=principal, body=body, today=runtime.today(), law=runtime.law
    )
    return AuditOut.of(await service.view(session, audit=audit))


@router.get("", summary="Audits the caller may see (an operator: its lodgings')")
async def list_audits(
    session: SessionDep, principal: PrincipalDep, tax_account: Annotated[str | None, Query()] = None
) -> list[AuditOut]:
    rows = await repository.audits_of(session, tax_account)
    steps = await repository.steps_of(session, [a.id for a in rows])
    return [
        AuditOut.of(service.AuditView(a, steps[a.id]))
        for a in rows
        if await _may_see(session, principal, a.tax_account)
    ]


@router.get("/{audit_id}", responses=ERRORS, summary="An audit and its steps")
async def show_audit(current: AuditDep) -> AuditOut:
    return AuditOut.of(current)


@router.post(
    "/{audit_id}/records-request",
    responses=ERRORS,
    summary="Request the lodging's records by a due date (the letter: /letter, /letter.pdf)",
)
async def request_records(body: RecordsRequestCreate, current: AuditDep, w: WorkDep) -> AuditOut:
    return await _worked(current, w, partial(service.request_records, ask=body, law=w.runtime.law))


@router.get("/{audit_id}/letter", responses=ERRORS, summary="The records request letter's content")
async def letter_json(current: AuditDep, session: SessionDep, runtime: RuntimeDep) -> RecordsLetter:
    request, lodging = await service.records_letter(session, current=current)
    return letter.letter_data(current.audit, request, lodging, law=runtime.law)


@router.get(
    "/{audit_id}/letter.pdf",
    responses={200: {"content": {"application/pdf": {}}}, **ERRORS},
    response_class=Response,
    summary="The records request letter (PDF)",
)
async def letter_pdf(
    current: AuditDep, session: SessionDep, settings: SettingsDep, runtime: RuntimeDep, lang: Lang = None
) -> Response:
    request, lodging = await service.records_letter(session, current=current)
    return pdf_response(
        documents.records_request_letter(
            current.audit,
            request,
            lodging,
            settings=settings,
            printed_on=runtime.today(),
            requested=lang,
            law=runtime.law,
        )
    )


@router.post(
    "/{audit_id}/findings",
    responses=ERRORS,
    summary="Record the auditor's finding for a period: the base lines as the records show them",
)
async def record_finding(body: AuditFindingCreate, current: AuditDep, w: WorkDep) -> AuditOut:
    return await _worked(current, w, partial(service.record_finding, finding=body, law=w.runtime.law))


@router.get(
    "/{audit_id}/proposed-assessment",
    responses=ERRORS,
    summary="The proposed assessment: taxcore's corrected returns less the filed ones, per component",
)
async def proposed(current: AuditDep, session: SessionDep, runtime: RuntimeDep) -> ProposedOut:
    p = await service.proposed_assessment(session, current=current, law=runtime.law)
    return ProposedOut(
        audit_id=current.audit.id,
        periods=[d.to_json() for d, _, _ in p.differences],
        additional_tax=p.additional_tax,
        section=current.audit.section,
    )


@router.post(
    "/{audit_id}/notice",
    responses=ERRORS,
    summary="Issue the notice of audit assessment (with the amendments the agency files for the lodging)",
)
async def issue_notice(current: AuditDep, w: WorkDep) -> AuditOut:
    return await _worked(current, w, partial(service.issue_notice, law=w.runtime.law))


@router.post("/{audit_id}/close", responses=ERRORS, summary="Close the audit")
async def close_audit(body: AuditClose, current: AuditDep, w: WorkDep) -> AuditOut:
    return await _worked(current, w, partial(service.close_audit, close=body))
