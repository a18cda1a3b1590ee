"""Payment plans: granted by the agency, requested and seen by the taxpayer."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from assessment.casework import approvals, work
from assessment.deps import FactsDep, WorkDep
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
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1", tags=["plans"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_plan(
    session: SessionDep, principal: PrincipalDep, plan_id: Annotated[str, Path()]
) -> PaymentPlan:
    plan = await session.get(PaymentPlan, plan_id)
    return await work.visible(session, principal, plan, f"no payment plan {plan_id!r}")


async def get_request(
    session: SessionDep, principal: PrincipalDep, request_id: Annotated[str, Path()]
) -> PlanRequest:
    row = await session.get(PlanRequest, request_id)
    return await work.visible(session, principal, row, f"no plan request {request_id!r}")


PlanDep = Annotated[PaymentPlan, Depends(get_plan)]
RequestDep = Annotated[PlanRequest, Depends(get_request)]


@router.post(
    "/accounts/{tax_account}/plans",
    status_code=201,
    responses=ERRORS,
    summary="Grant a payment plan for the balance of the account's periods as of a date",
)
async def grant_plan(body: PlanCreate, facts: FactsDep, w: WorkDep) -> PlanOut:
    await w.staff_lock(facts.tax_account, what="grant a payment plan")
    today = w.today
    plan = await service.grant(
        w.session, facts=facts, principal=w.principal, settings=w.settings, grant=body, today=today
    )
    return await service.view(w.session, facts=facts, plan=plan, on=today)


@router.get(
    "/accounts/{tax_account}/plans",
    responses=ERRORS,
    summary="The account's payment plans, each with its schedule and status today",
)
async def list_plans(facts: FactsDep, session: SessionDep, runtime: RuntimeDep) -> list[PlanOut]:
    plans = await repository.account_plans(session, facts.tax_account)
    return [await service.view(session, facts=facts, plan=p, on=runtime.today()) for p in plans]


@router.get("/plans/{plan_id}", responses=ERRORS, summary="One plan and its schedule")
async def show_plan(plan: PlanDep, session: SessionDep, runtime: RuntimeDep) -> PlanOut:
    facts = await work.facts_of(session, plan.tax_account)
    return await service.view(session, facts=facts, plan=plan, on=runtime.today())


@router.post(
    "/accounts/{tax_account}/plan-requests",
    status_code=201,
    responses=ERRORS,
    summary="The taxpayer asks for a payment plan (it goes to the agency's queue)",
)
async def request_plan(body: PlanRequestCreate, facts: FactsDep, w: WorkDep) -> PlanRequestOut:
    row = await service.request(w.session, facts=facts, principal=w.principal, ask=body, today=w.today)
    return await service.request_view(w.session, req=row)


@router.get(
    "/accounts/{tax_account}/plan-requests",
    responses=ERRORS,
    summary="The account's plan requests",
)
async def list_account_requests(facts: FactsDep, session: SessionDep) -> list[PlanRequestOut]:
    return await service.account_request_views(session, tax_account=facts.tax_account)


@router.get(
    "/plan-requests",
    responses=Forbidden.openapi(),
    summary=f"The agency's queue: the oldest {repository.QUEUE_LIMIT} requests neither granted nor declined",
)
async def queue(session: SessionDep, principal: PrincipalDep) -> list[PlanRequestOut]:
    approvals.require_agency_staff(principal, "work the plan request queue")
    return await service.queue_views(session)


@router.get("/plan-requests/{request_id}", responses=ERRORS, summary="One request")
async def show_request(req: RequestDep, session: SessionDep) -> PlanRequestOut:
    return await service.request_view(session, req=req)


@router.post(
    "/plan-requests/{request_id}/decline",
    responses=ERRORS,
    summary="Decline a taxpayer's plan request, with the reasons",
)
async def decline_request(body: DeclineCreate, req: RequestDep, w: WorkDep) -> PlanRequestOut:
    await w.staff_lock(req.tax_account, what="decline a plan request")
    await service.decline(
        w.session,
        req=req,
        principal=w.principal,
        settings=w.settings,
        reasons=body.reasons,
        today=w.today,
    )
    return await service.request_view(w.session, req=req)
