"""Reads for the agency's dashboards (agency roles only).

They read ``account_summaries``, each account's balance as of its last refresh
(on every change of its facts, and by the daily job), so interest accrued since
the last refresh is not in them; days past due are counted to ``as_of``.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Query

from assessment.dashboard import repository
from assessment.dashboard.schemas import Aging, Delinquent, MonthRow
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep
from servicekit.db import SessionDep
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.runtime import RuntimeDep
from taxcore.money import fmt

router = make_router(prefix="/v1/dashboard", tags=["dashboard"])
Jurisdiction = Annotated[str | None, Query(pattern="^[A-Z]{2}$")]


@router.get("/aging", summary="Receivables by days past due, per jurisdiction and lodging class")
async def get_aging(
    session: SessionDep,
    _: AgencyReadDep,
    runtime: RuntimeDep,
    as_of: date | None = None,
    jurisdiction: Jurisdiction = None,
    lodging_class: str | None = None,
) -> Aging:
    on = as_of or runtime.today()
    groups = await repository.aging(session, as_of=on, jurisdiction=jurisdiction, lodging_class=lodging_class)
    return Aging.of(on, groups)


@router.get("/delinquents", summary="Lodgings with balances past due, largest first")
async def get_delinquents(
    session: SessionDep,
    _: AgencyReadDep,
    runtime: RuntimeDep,
    as_of: date | None = None,
    jurisdiction: Jurisdiction = None,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
) -> Page[Delinquent]:
    rows = await repository.delinquents(
        session,
        as_of=as_of or runtime.today(),
        jurisdiction=jurisdiction,
        limit=limit,
        after=decode_cursor(cursor, arity=2),
    )
    return paginate(
        rows,
        limit=limit,
        key=lambda r: [fmt(r.balance), r.tax_account],
        to_item=Delinquent.model_validate,
    )


@router.get(
    "/monthly",
    summary="Assessed (by tax period) versus collected (by month received), per month",
)
async def get_monthly(
    session: SessionDep,
    _: AgencyReadDep,
    start: Annotated[str, Query(alias="from", pattern=r"^\d{4}-\d{2}$")],
    end: Annotated[str, Query(alias="to", pattern=r"^\d{4}-\d{2}$")],
    jurisdiction: Jurisdiction = None,
) -> list[MonthRow]:
    months = await repository.monthly(session, start=start, end=end, jurisdiction=jurisdiction)
    return [MonthRow.model_validate(m) for m in months]
