"""Reads for the agency's dashboards (agency roles only).

They read ``account_summaries``, each account's balance as of its last refresh
(on every change of its facts, and by the daily job), so interest accrued since
the last refresh is not in them; days past due are counted to ``as_of``.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated

from fastapi import Query
from pydantic import BaseModel

from assessment.dashboard import repository
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep
from servicekit.db import SessionDep
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.runtime import RuntimeDep
from taxcore.money import SignedMoney, fmt

router = make_router(prefix="/v1/dashboard", tags=["dashboard"])
Jurisdiction = Annotated[str | None, Query(pattern="^[A-Z]{2}$")]


class AgingRow(BaseModel):
    jurisdiction: str
    lodging_class: str
    current: SignedMoney
    days_1_30: SignedMoney
    days_31_90: SignedMoney
    days_91_180: SignedMoney
    days_181_365: SignedMoney
    over_365: SignedMoney
    total: SignedMoney
    accounts: int


class Aging(BaseModel):
    as_of: date
    rows: list[AgingRow]
    totals: dict[str, SignedMoney]


class Delinquent(BaseModel):
    tax_account: str
    jurisdiction: str
    lodging_class: str
    operator_id: str | None
    balance: SignedMoney
    periods: int
    oldest_due_date: date
    max_days_past_due: int


class MonthRow(BaseModel):
    month: str
    assessed: SignedMoney
    collected: SignedMoney


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
    rows = await repository.aging(session, as_of=on, jurisdiction=jurisdiction, lodging_class=lodging_class)
    totals = {b: fmt(sum((Decimal(r[b]) for r in rows), Decimal(0))) for b in (*repository.BUCKETS, "total")}
    return Aging(
        as_of=on,
        rows=[
            AgingRow.model_validate({**r, **{b: fmt(Decimal(r[b])) for b in (*repository.BUCKETS, "total")}})
            for r in rows
        ],
        totals=totals,
    )


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
        key=lambda r: [fmt(r["balance"]), r["tax_account"]],
        to_item=lambda r: Delinquent.model_validate({**r, "balance": fmt(r["balance"])}),
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
    rows = await repository.monthly(session, start=start, end=end, jurisdiction=jurisdiction)
    return [
        MonthRow(
            month=r["month"], assessed=fmt(Decimal(r["assessed"])), collected=fmt(Decimal(r["collected"]))
        )
        for r in rows
    ]
