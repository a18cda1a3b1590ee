from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Path, Query

from distribution.ledger import repository as ledger
from distribution.reports import service
from distribution.reports.schemas import (
    AllocationsByMonth,
    EntryOut,
    FiscalYearSummary,
    FundBalances,
    LineOut,
    TrialBalance,
)
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_int_cursor, encode_cursor
from servicekit.runtime import RuntimeDep
from taxcore.jurisdictions import JurisdictionCode

router = make_router(tags=["funds and ledger"])
ERRORS = {**Forbidden.openapi(), **ValidationFailed.openapi()}
JurisdictionQuery = Annotated[
    JurisdictionCode, Query(description="a jurisdiction with taxcore parameters, e.g. PR or VI")
]


@router.get(
    "/v1/funds",
    responses=ERRORS,
    summary="Balance of each fund (and pending, other receipts, suspense) as of a date",
)
async def get_fund_balances(
    session: SessionDep,
    _: AgencyReadDep,
    jurisdiction: JurisdictionQuery,
    runtime: RuntimeDep,
    as_of: date | None = None,
) -> FundBalances:
    return await service.fund_balances(
        session, jurisdiction=jurisdiction, as_of=as_of or runtime.today(), law=runtime.law
    )


@router.get(
    "/v1/allocations",
    responses=ERRORS,
    summary="Each run month of a fiscal year, allocated by fund",
)
async def get_allocations(
    session: SessionDep,
    _: AgencyReadDep,
    jurisdiction: JurisdictionQuery,
    fiscal_year: Annotated[int, Query(ge=2004, le=9999)],
) -> AllocationsByMonth:
    return await service.allocations_by_month(session, jurisdiction=jurisdiction, fiscal_year=fiscal_year)


@router.get(
    "/v1/fiscal-years/{fiscal_year}/summary",
    responses=ERRORS,
    summary="A fiscal year per fund against its statutory floor (on track or not)",
)
async def get_fiscal_year_summary(
    session: SessionDep,
    _: AgencyReadDep,
    fiscal_year: Annotated[int, Path(ge=2004, le=9999)],
    jurisdiction: JurisdictionQuery,
    runtime: RuntimeDep,
) -> FiscalYearSummary:
    return await service.fiscal_year_summary(
        session, jurisdiction=jurisdiction, fiscal_year=fiscal_year, law=runtime.law
    )


@router.get(
    "/v1/ledger/trial-balance",
    responses=ERRORS,
    summary="Debits and credits per account; total debits equal total credits",
)
async def get_trial_balance(
    session: SessionDep,
    _: AgencyReadDep,
    jurisdiction: Annotated[str | None, Query(pattern="^[A-Z]{2}$")] = None,
    as_of: date | None = None,
) -> TrialBalance:
    return await service.trial_balance(session, jurisdiction=jurisdiction, as_of=as_of)


@router.get(
    "/v1/ledger/entries",
    responses=ERRORS,
    summary="Journal entries with their lines, in posting order",
)
async def list_entries(
    session: SessionDep,
    _: AgencyReadDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    jurisdiction: Annotated[str | None, Query(pattern="^[A-Z]{2}$")] = None,
    run_id: str | None = None,
    tax_account: Annotated[
        str | None, Query(max_length=40, description="only this lodging's collection entries")
    ] = None,
) -> Page[EntryOut]:
    after = decode_int_cursor(cursor)
    rows = await ledger.list_entries(
        session,
        jurisdiction=jurisdiction,
        run_id=run_id,
        after=after,
        limit=limit,
        tax_account=tax_account,
    )
    kept = list(rows[:limit])
    lines = await ledger.lines_of(session, [e.id for e in kept])
    items = [
        EntryOut(
            id=e.id,
            jurisdiction=e.jurisdiction,
            kind=e.kind,
            effective_on=e.effective_on,
            description=e.description,
            event_id=e.event_id,
            run_id=e.run_id,
            reverses_entry_id=e.reverses_entry_id,
            lines=[
                LineOut(account=x.account_code, amount=x.amount, rule=x.rule, section=x.section)
                for x in lines[e.id]
            ],
        )
        for e in kept
    ]
    return Page[EntryOut](
        items=items, next_cursor=encode_cursor([kept[-1].id]) if len(rows) > limit else None
    )
