"""Payment plans: granted by the agency, requested and seen by the taxpayer."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from assessment import clock
from assessment.accounts import repository as accounts_repo
from assessment.casework import approvals
from assessment.casework import repository as casework_repo
from assessment.casework.endpoints import SettingsDep
from assessment.deps import FactsDep
from assessment.plans import repository, service
from assessment.plans.models import PaymentPlan, PlanRequest
from assessment.plans.schemas import (
    DeclineCreate,
    PlanCreate,
    PlanOut,
    PlanRequestCreate,
    PlanRequestOut,
)
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed

router = make_router(prefix="/v1", tags=["plans"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_plan(
    session: SessionDep, principal: PrincipalDep, plan_id: Annotated[str, Path()]
) -> PaymentPlan:
    plan = await session.get(PaymentPlan, plan_id)
    if plan is None or not await casework_repo.can_see(session, principal, plan.tax_account):
        raise NotFound(f"no payment plan {plan_id!r}")
    return plan


async def get_request(
    session: SessionDep, principal: PrincipalDep, request_id: Annotated[str, Path()]
) -> PlanRequest:
    row = await session.get(PlanRequest, request_id)
    if row is None or not await casework_repo.can_see(session, principal, row.tax_account):
        raise NotFound(f"no plan request {request_id!r}")
    return row


PlanDep = Annotated[PaymentPlan, Depends(get_plan)]
RequestDep = Annotated[PlanRequest, Depends(get_request)]


@router.post(
    "/accounts/{tax_account}/plans",
    status_code=201,
    response_model=PlanOut,
    responses=ERRORS,
    summary="Grant a payment plan for the balance of the account's periods as of a date",
)
async def grant_plan(
    body: PlanCreate, facts: FactsDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> PlanOut:
    approvals.require_agency_staff(principal, "grant a payment plan")
    await accounts_repo.lock_account(session, facts.tax_account)
    plan = await service.grant(
        session,
        facts=facts,
        principal=principal,
        settings=settings,
        as_of=body.as_of or clock.today(),
        periods=body.periods,
        down_payment=service.Line(body.down_payment.due_on, body.down_payment.amount)
        if body.down_payment
        else None,
        installments=[service.Line(x.due_on, x.amount) for x in body.installments],
        request_id=body.request_id,
    )
    return PlanOut.model_validate(await service.out(session, facts=facts, plan=plan, on=clock.today()))


@router.get(
    "/accounts/{tax_account}/plans",
    response_model=list[PlanOut],
    responses=ERRORS,
    summary="The account's payment plans, each with its schedule and status today",
)
async def list_plans(facts: FactsDep, session: SessionDep) -> list[PlanOut]:
    plans = await repository.account_plans(session, facts.tax_account)
    return [
        PlanOut.model_validate(await service.out(session, facts=facts, plan=p, on=clock.today()))
        for p in plans
    ]


@router.get("/plans/{plan_id}", response_model=PlanOut, responses=ERRORS, summary="One plan and its schedule")
async def show_plan(plan: PlanDep, session: SessionDep) -> PlanOut:
    facts = await accounts_repo.load_facts(session, plan.tax_account)
    assert facts is not None
    return PlanOut.model_validate(await service.out(session, facts=facts, plan=plan, on=clock.today()))


@router.post(
    "/accounts/{tax_account}/plan-requests",
    status_code=201,
    response_model=PlanRequestOut,
    responses=ERRORS,
    summary="The taxpayer asks for a payment plan (it goes to the agency's queue)",
)
async def request_plan(
    body: PlanRequestCreate, facts: FactsDep, session: SessionDep, principal: PrincipalDep
) -> PlanRequestOut:
    row = await service.request(
        session,
        facts=facts,
        principal=principal,
        installments=body.installments,
        explanation=body.explanation,
    )
    return PlanRequestOut.model_validate(await service.request_out(session, req=row))


@router.get(
    "/accounts/{tax_account}/plan-requests",
    response_model=list[PlanRequestOut],
    responses=ERRORS,
    summary="The account's plan requests",
)
async def list_account_requests(facts: FactsDep, session: SessionDep) -> list[PlanRequestOut]:
    rows = await repository.account_requests(session, facts.tax_account)
    return [PlanRequestOut.model_validate(await service.request_out(session, req=r)) for r in rows]


@router.get(
    "/plan-requests",
    response_model=list[PlanRequestOut],
    responses=Forbidden.openapi(),
    summary="The agency's queue: plan requests neither granted nor declined, oldest first",
)
async def queue(session: SessionDep, principal: PrincipalDep) -> list[PlanRequestOut]:
    approvals.require_agency_staff(principal, "work the plan request queue")
    rows = await repository.pending_requests(session)
    return [PlanRequestOut.model_validate(await service.request_out(session, req=r)) for r in rows]


@router.get(
    "/plan-requests/{request_id}", response_model=PlanRequestOut, responses=ERRORS, summary="One request"
)
async def show_request(req: RequestDep, session: SessionDep) -> PlanRequestOut:
    return PlanRequestOut.model_validate(await service.request_out(session, req=req))


@router.post(
    "/plan-requests/{request_id}/decline",
    response_model=PlanRequestOut,
    responses=ERRORS,
    summary="Decline a taxpayer's plan request, with the reasons",
)
async def decline_request(
    body: DeclineCreate, req: RequestDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> PlanRequestOut:
    approvals.require_agency_staff(principal, "decline a plan request")
    await accounts_repo.lock_account(session, req.tax_account)
    await service.decline(session, req=req, principal=principal, settings=settings, reasons=body.reasons)
    return PlanRequestOut.model_validate(await service.request_out(session, req=req))
