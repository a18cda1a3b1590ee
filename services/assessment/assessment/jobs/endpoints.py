from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated

from fastapi import Query, Request

from assessment.jobs import service
from assessment.jobs.schemas import LapsedOut, NonFilersOut, PlanStepsOut
from assessment.notices.service import request_lapsed_draws
from assessment.plans import service as plans
from servicekit.app import router as make_router
from servicekit.auth import AdminDep
from servicekit.db import SessionDep
from servicekit.errors import ValidationFailed
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/jobs", tags=["jobs"])


AsOf = Annotated[date | None, Query(description="run as of this date; default today")]


def _as_of(as_of: date | None, today: date) -> date:
    on = as_of or today
    if on > today:
        raise ValidationFailed.on("as_of", "a job cannot run for a future date", root="query")
    return on


@router.post(
    "/non-filers",
    responses=ValidationFailed.openapi(),
    summary="Estimate every active lodging's unfiled periods past due (PR §32; VI §54(d))",
)
async def run_non_filers(
    request: Request,
    session: SessionDep,
    _: AdminDep,
    runtime: RuntimeDep,
    as_of: AsOf = None,
    industry_cost: Annotated[
        Decimal | None,
        Query(gt=0, description="per-night value for lodgings without filed history (PR §32)"),
    ] = None,
) -> NonFilersOut:
    cost = industry_cost if industry_cost is not None else request.app.state.settings.estimate_industry_cost
    result = await service.estimate_non_filers(
        session, as_of=_as_of(as_of, runtime.today()), industry_cost=cost, law=runtime.law
    )
    return NonFilersOut.model_validate(result, from_attributes=True)


@router.post(
    "/lapsed-notices",
    responses=ValidationFailed.openapi(),
    summary="Ask the registry to draw the bond for notices lapsed unpaid (PR §33)",
)
async def run_lapsed_notices(
    session: SessionDep, _: AdminDep, runtime: RuntimeDep, as_of: AsOf = None
) -> LapsedOut:
    on = _as_of(as_of, runtime.today())
    return LapsedOut.of(on, await request_lapsed_draws(session, as_of=on, law=runtime.law))


@router.post(
    "/payment-plans",
    responses=ValidationFailed.openapi(),
    summary="Record installments paid or unpaid again, plans completed, reopened or defaulted (with notices)",
)
async def run_payment_plans(
    session: SessionDep, _: AdminDep, runtime: RuntimeDep, as_of: AsOf = None
) -> PlanStepsOut:
    on = _as_of(as_of, runtime.today())
    return PlanStepsOut.of(on, await plans.run(session, as_of=on))
