"""Cases: a dispute's timeline, hearing, decision (maker-checker for reduce/cancel) and appeal."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Depends, Path, Query

from assessment.cases import service
from assessment.cases.schemas import AppealCreate, AppealResolution, CaseOut, DecisionCreate, HearingCreate
from assessment.casework import repository, work
from assessment.casework.models import Case
from assessment.deps import WorkDep
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/cases", tags=["cases"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_case(session: SessionDep, principal: PrincipalDep, case_id: Annotated[str, Path()]) -> Case:
    return await work.visible(session, principal, await session.get(Case, case_id), f"no case {case_id!r}")


CaseDep = Annotated[Case, Depends(get_case)]
WORK = "work a case"


async def _out(session: SessionDep, case: Case, today: date) -> CaseOut:
    return await service.shown(session, current=await service.view(session, case=case, on=today), on=today)


@router.get("", summary="The cases of an account the caller may see")
async def list_cases(
    session: SessionDep,
    principal: PrincipalDep,
    tax_account: Annotated[str, Query(min_length=1)],
    runtime: RuntimeDep,
) -> list[CaseOut]:
    if not await repository.can_see(session, principal, tax_account):
        return []
    today = runtime.today()
    return [await _out(session, c, today) for c in await repository.account_cases(session, tax_account)]


@router.get("/{case_id}", responses=ERRORS, summary="A case and its timeline")
async def show_case(case: CaseDep, session: SessionDep, runtime: RuntimeDep) -> CaseOut:
    return await _out(session, case, runtime.today())


@router.post("/{case_id}/review", responses=ERRORS, summary="Start the review")
async def start_review(case: CaseDep, w: WorkDep) -> CaseOut:
    await w.staff_lock(case.tax_account, what=WORK)
    await service.start_review(
        w.session, case=case, principal=w.principal, settings=w.settings, today=w.today
    )
    return await _out(w.session, case, w.today)


@router.post("/{case_id}/hearing", responses=ERRORS, summary="Schedule (or move) the hearing")
async def schedule_hearing(body: HearingCreate, case: CaseDep, w: WorkDep) -> CaseOut:
    await w.staff_lock(case.tax_account, what=WORK)
    await service.schedule_hearing(
        w.session,
        case=case,
        principal=w.principal,
        settings=w.settings,
        hearing=body,
        today=w.today,
    )
    return await _out(w.session, case, w.today)


@router.post(
    "/{case_id}/decision",
    responses=ERRORS,
    summary="Decide: sustain now, or propose reduce/cancel for another agency person's approval",
)
async def decide(body: DecisionCreate, case: CaseDep, w: WorkDep) -> CaseOut:
    facts = await w.locked_facts(case.tax_account, staff=WORK)
    await service.propose_decision(
        w.session,
        case=case,
        facts=facts,
        principal=w.principal,
        settings=w.settings,
        decision=body,
        today=w.today,
    )
    return await _out(w.session, case, w.today)


@router.post(
    "/{case_id}/appeal",
    responses=ERRORS,
    summary="Record an appeal against the decision (collection actions wait until it is resolved)",
)
async def appeal(body: AppealCreate, case: CaseDep, w: WorkDep) -> CaseOut:
    await w.lock(case.tax_account)
    await service.appeal(
        w.session,
        case=case,
        principal=w.principal,
        filed_on=body.filed_on or w.today,
        grounds=body.grounds,
        today=w.today,
    )
    return await _out(w.session, case, w.today)


@router.post("/{case_id}/appeal/resolution", responses=ERRORS, summary="Resolve the appeal")
async def resolve_appeal(body: AppealResolution, case: CaseDep, w: WorkDep) -> CaseOut:
    facts = await w.locked_facts(case.tax_account, staff=WORK)
    await service.resolve_appeal(
        w.session,
        case=case,
        facts=facts,
        principal=w.principal,
        settings=w.settings,
        resolution=body,
        today=w.today,
    )
    return await _out(w.session, case, w.today)
