from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any

from fastapi import Query, Request
from pydantic import BaseModel

from assessment import clock
from assessment.jobs import service
from assessment.notices.service import request_lapsed_draws
from assessment.plans import service as plans
from servicekit.app import router as make_router
from servicekit.auth import AdminDep
from servicekit.db import SessionDep
from servicekit.errors import ValidationFailed
from taxcore.money import fmt

router = make_router(prefix="/v1/jobs", tags=["jobs"])


class NonFilersOut(BaseModel):
    as_of: date
    raised: list[dict[str, str]]
    skipped: list[dict[str, str]]


class LapsedOut(BaseModel):
    as_of: date
    requested: list[dict[str, Any]]


def _as_of(as_of: date | None) -> date:
    on = as_of or clock.today()
    if on > clock.today():
        raise ValidationFailed.on("as_of", "a job cannot run for a future date", root="query")
    return on


@router.post(
    "/non-filers",
    response_model=NonFilersOut,
    responses=ValidationFailed.openapi(),
    summary="Estimate every active lodging's unfiled periods past due (PR §32; VI §54(d))",
)
async def run_non_filers(
    request: Request,
    session: SessionDep,
    _: AdminDep,
    as_of: Annotated[date | None, Query(description="run as of this date; default today")] = None,
    industry_cost: Annotated[
        Decimal | None,
        Query(gt=0, description="per-night value for lodgings without filed history (PR §32)"),
    ] = None,
) -> NonFilersOut:
    cost = industry_cost if industry_cost is not None else request.app.state.settings.estimate_industry_cost
    result = await service.estimate_non_filers(session, as_of=_as_of(as_of), industry_cost=cost)
    return NonFilersOut.model_validate(result)


@router.post(
    "/lapsed-notices",
    response_model=LapsedOut,
    responses=ValidationFailed.openapi(),
    summary="Ask the registry to draw the bond for notices lapsed unpaid (PR §33)",
)
async def run_lapsed_notices(
    session: SessionDep,
    _: AdminDep,
    as_of: Annotated[date | None, Query(description="run as of this date; default today")] = None,
) -> LapsedOut:
    on = _as_of(as_of)
    made = await request_lapsed_draws(session, as_of=on)
    return LapsedOut(
        as_of=on,
        requested=[
            {
                "notice_id": r.notice_id,
                "tax_account": r.tax_account,
                "period": r.period,
                "bond_id": r.bond_id,
                "amount": fmt(r.amount),
                "event_id": r.event_id,
            }
            for r in made
        ],
    )


class PlanStepsOut(BaseModel):
    as_of: date
    steps: list[dict[str, Any]]


@router.post(
    "/payment-plans",
    response_model=PlanStepsOut,
    responses=ValidationFailed.openapi(),
    summary="Record installments paid, plans completed and plans defaulted (with their notices)",
)
async def run_payment_plans(
    session: SessionDep,
    _: AdminDep,
    as_of: Annotated[date | None, Query(description="run as of this date; default today")] = None,
) -> PlanStepsOut:
    on = _as_of(as_of)
    made = await plans.run(session, as_of=on)
    return PlanStepsOut(
        as_of=on,
        steps=[
            {"plan_id": s.subject_id, "tax_account": s.tax_account, "step": s.step, "on": s.on} for s in made
        ],
    )
