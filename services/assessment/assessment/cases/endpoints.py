"""Cases: a dispute's timeline, hearing, decision (maker-checker for reduce/cancel) and appeal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query

from assessment import clock
from assessment.accounts import repository as accounts_repo
from assessment.cases import service
from assessment.cases.schemas import AppealCreate, AppealResolution, CaseOut, DecisionCreate, HearingCreate
from assessment.casework import approvals, repository
from assessment.casework.endpoints import SettingsDep
from assessment.casework.models import Case
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed

router = make_router(prefix="/v1/cases", tags=["cases"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_case(session: SessionDep, principal: PrincipalDep, case_id: Annotated[str, Path()]) -> Case:
    case = await session.get(Case, case_id)
    if case is None or not await repository.can_see(session, principal, case.tax_account):
        raise NotFound(f"no case {case_id!r}")
    return case


CaseDep = Annotated[Case, Depends(get_case)]


async def _out(session: SessionDep, case: Case) -> CaseOut:
    current = await service.view(session, case=case)
    hold = await service.hold_of(session, tax_account=case.tax_account, period=case.period, on=clock.today())
    return CaseOut.model_validate({**service.out(current), **service.hold_out(hold)})


@router.get("", response_model=list[CaseOut], summary="The cases of an account the caller may see")
async def list_cases(
    session: SessionDep, principal: PrincipalDep, tax_account: Annotated[str, Query(min_length=1)]
) -> list[CaseOut]:
    if not await repository.can_see(session, principal, tax_account):
        return []
    return [await _out(session, c) for c in await repository.account_cases(session, tax_account)]


@router.get("/{case_id}", response_model=CaseOut, responses=ERRORS, summary="A case and its timeline")
async def show_case(case: CaseDep, session: SessionDep) -> CaseOut:
    return await _out(session, case)


@router.post("/{case_id}/review", response_model=CaseOut, responses=ERRORS, summary="Start the review")
async def start_review(
    case: CaseDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> CaseOut:
    approvals.require_agency_staff(principal, "work a case")
    await accounts_repo.lock_account(session, case.tax_account)
    await service.start_review(session, case=case, principal=principal, settings=settings)
    return await _out(session, case)


@router.post(
    "/{case_id}/hearing", response_model=CaseOut, responses=ERRORS, summary="Schedule (or move) the hearing"
)
async def schedule_hearing(
    body: HearingCreate, case: CaseDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> CaseOut:
    approvals.require_agency_staff(principal, "work a case")
    await accounts_repo.lock_account(session, case.tax_account)
    await service.schedule_hearing(
        session,
        case=case,
        principal=principal,
        settings=settings,
        hearing_on=body.hearing_on,
        place=body.place,
        video_link=body.video_link,
    )
    return await _out(session, case)


@router.post(
    "/{case_id}/decision",
    response_model=CaseOut,
    responses=ERRORS,
    summary="Decide: sustain now, or propose reduce/cancel for another agency person's approval",
)
async def decide(
    body: DecisionCreate, case: CaseDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> CaseOut:
    approvals.require_agency_staff(principal, "work a case")
    await accounts_repo.lock_account(session, case.tax_account)
    facts = await accounts_repo.load_facts(session, case.tax_account)
    assert facts is not None
    await service.propose_decision(
        session,
        case=case,
        facts=facts,
        principal=principal,
        settings=settings,
        outcome=body.outcome,
        amounts=dict(body.amounts),
        reasons=body.reasons,
    )
    return await _out(session, case)


@router.post(
    "/{case_id}/appeal",
    response_model=CaseOut,
    responses=ERRORS,
    summary="Record an appeal against the decision (collection actions wait until it is resolved)",
)
async def appeal(body: AppealCreate, case: CaseDep, session: SessionDep, principal: PrincipalDep) -> CaseOut:
    await accounts_repo.lock_account(session, case.tax_account)
    await service.appeal(
        session, case=case, principal=principal, filed_on=body.filed_on or clock.today(), grounds=body.grounds
    )
    return await _out(session, case)


@router.post(
    "/{case_id}/appeal/resolution", response_model=CaseOut, responses=ERRORS, summary="Resolve the appeal"
)
async def resolve_appeal(
    body: AppealResolution, case: CaseDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> CaseOut:
    approvals.require_agency_staff(principal, "work a case")
    await accounts_repo.lock_account(session, case.tax_account)
    facts = await accounts_repo.load_facts(session, case.tax_account)
    assert facts is not None
    await service.resolve_appeal(
        session,
        case=case,
        facts=facts,
        principal=principal,
        settings=settings,
        outcome=body.outcome,
        reasons=body.reasons,
        decision=body.decision.model_dump(mode="json") if body.decision is not None else None,
    )
    return await _out(session, case)
