"""Reads: fund balances, allocations by month, fiscal-year summary against the floors, trial balance."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from distribution.certifications import repository as certifications
from distribution.ledger import accounts
from distribution.ledger.service import balances, total
from distribution.openings import repository as openings
from distribution.openings import service as opening_service
from distribution.reports.schemas import (
    AccountBalanceOut,
    AllocationsByMonth,
    DebtService,
    FiscalYearSummary,
    FloorStatus,
    FundBalances,
    FundSummary,
    MonthAllocations,
    OpeningSummary,
    TrialBalance,
    TrialBalanceLine,
)
from distribution.runs import repository as runs
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, fiscal_year_months
from taxcore.rules.distribution import debt_service_status, reported_floors, takes_certification

DISTRIBUTED_KINDS = ("fund", "other", "suspense")


async def fund_balances(
    session: AsyncSession, *, jurisdiction: str, as_of: date, law: ParameterTree
) -> FundBalances:
    items = await balances(session, jurisdiction=jurisdiction, as_of=as_of)
    known = {b.account.code for b in items}
    out = [
        AccountBalanceOut(
            account=b.account.code,
            jurisdiction=b.account.jurisdiction,
            kind=b.account.kind,
            name=b.account.name,
            section=b.account.section,
            balance=b.balance,
        )
        for b in items
        if b.account.kind != "cash"
    ]
    for spec in accounts.fund_accounts(jurisdiction, as_of, law=law):
        if spec.code not in known:
            out.append(
                AccountBalanceOut(
                    account=spec.code,
                    jurisdiction=jurisdiction,
                    kind="fund",
                    name=spec.name,
                    section=spec.section,
                    balance=ZERO,
                )
            )
    collected, pending = total(items, "cash"), total(items, "pending")
    distributed = total(items, *DISTRIBUTED_KINDS)
    return FundBalances(
        jurisdiction=jurisdiction,
        as_of=as_of,
        accounts=out,
        collected=collected,
        pending=pending,
        distributed=distributed,
        conserved=distributed + pending == collected,
    )


async def allocations_by_month(
    session: AsyncSession, *, jurisdiction: str, fiscal_year: int
) -> AllocationsByMonth:
    months: list[MonthAllocations] = []
    totals: dict[str, Decimal] = {}
    for run in await runs.runs_of_year(session, jurisdiction, fiscal_year):
        per: dict[str, Decimal] = {}
        for a in run.allocations:
            per[a["account"]] = per.get(a["account"], ZERO) + Decimal(a["amount"])
            totals[a["account"]] = totals.get(a["account"], ZERO) + Decimal(a["amount"])
        months.append(
            MonthAllocations(
                month=run.month, run_id=run.id, collected=run.collected, pending=run.pending, allocations=per
            )
        )
    return AllocationsByMonth(
        jurisdiction=jurisdiction, fiscal_year=fiscal_year, months=months, totals=totals
    )


def _floors(jurisdiction: str, on: date, law: ParameterTree) -> dict[str, tuple[Decimal, int, str]]:
    """fund code -> (annual floor, installments, section), as taxcore reports them."""
    return {f.fund: (f.annual, f.installments, f.section) for f in reported_floors(jurisdiction, on, law)}


def _owed(annual: Decimal, installments: int, elapsed: int) -> Decimal:
    """Floor owed after ``elapsed`` months: ``installments`` equal parts, rounded on the cumulative amount."""
    if elapsed >= installments:
        return annual
    owed: Decimal = round_cents(annual * elapsed / installments)
    return owed


async def fiscal_year_summary(
    session: AsyncSession, *, jurisdiction: str, fiscal_year: int, law: ParameterTree
) -> FiscalYearSummary:
    months = fiscal_year_months(jurisdiction, fiscal_year, parameters=law)
    first = months[0].first_day
    year_runs = list(await runs.runs_of_year(session, jurisdiction, fiscal_year))
    last = year_runs[-1] if year_runs else None
    # go-live: what the funds received this fiscal year before the first run counts toward
    # the floors and the debt service, and is shown as such
    opening = await openings.current(session, jurisdiction)
    if opening is not None and opening.fiscal_year != fiscal_year:
        opening = None
    opened: dict[str, Decimal] = {
        accounts.fund_account_code(code): Decimal(v)
        for code, v in (opening.transferred if opening else {}).items()
    }
    through = last.month if last else (opening.through_month if opening else None)
    elapsed = months.index(Period.parse(through)) + 1 if through else 0
    received: dict[str, Decimal] = dict(opened)
    for run in year_runs:
        for a in run.allocations:
            received[a["account"]] = received.get(a["account"], ZERO) + Decimal(a["amount"])
    floors = _floors(jurisdiction, first, law)
    specs = [
        *accounts.fund_accounts(jurisdiction, first, law=law),
        accounts.other(jurisdiction, first, law=law),
        accounts.suspense(jurisdiction),
    ]
    funds: list[FundSummary] = []
    on_track = True
    for spec in specs:
        got = received.get(spec.code, ZERO)
        if spec.kind != "fund" and not got:
            continue
        floor: FloorStatus | None = None
        code = spec.code.removeprefix("fund:")
        if code in floors:
            annual, installments, section = floors[code]
            owed = _owed(annual, installments, elapsed)
            floor = FloorStatus(
                annual=annual,
                installments=installments,
                deadline=months[installments - 1].last_day,
                owed_to_date=owed,
                shortfall_to_date=max(ZERO, owed - got),
                on_track=got >= owed,
                met=got >= annual,
                section=section,
            )
            on_track = on_track and floor.on_track
        funds.append(
            FundSummary(
                account=spec.code,
                name=spec.name,
                section=spec.section,
                received=got,
                opening=opened.get(spec.code, ZERO),
                floor=floor,
            )
        )
    debt: DebtService | None = None
    debt_held = ZERO
    start_state = opening_service.applied(opening, law).state if opening is not None else None
    status = debt_service_status(jurisdiction, fiscal_year, last.state if last else start_state)
    if status is not None:
        cert = (
            await certifications.current(session, jurisdiction, fiscal_year)
            if takes_certification(jurisdiction, first, law)
            else None
        )
        debt = DebtService(
            certification_id=cert.id if cert else None,
            certified=cert.amount if cert else None,
            scheduled_to_date=status.scheduled_to_date,
            transferred=status.transferred,
            arrears_carried=status.arrears_carried,
            shortfall=status.shortfall,
            on_track=status.shortfall == 0 and status.held == 0,
        )
        on_track = on_track and debt.on_track
        debt_held = status.held
    return FiscalYearSummary(
        jurisdiction=jurisdiction,
        fiscal_year=fiscal_year,
        months_run=len(year_runs),
        last_month=last.month if last else None,
        collected=sum((r.collected for r in year_runs), ZERO),
        pending=debt_held,
        funds=funds,
        debt_service=debt,
        opening_state=None
        if opening is None
        else OpeningSummary(
            id=opening.id,
            version=opening.version,
            through_month=opening.through_month,
            document_reference=opening.document_reference,
            collected=sum(opened.values(), ZERO),
            entered_by=opening.entered_by,
            entered_at=opening.created_at,
        ),
        on_track=on_track,
    )


async def trial_balance(
    session: AsyncSession, *, jurisdiction: str | None, as_of: date | None
) -> TrialBalance:
    items = await balances(session, jurisdiction=jurisdiction, as_of=as_of)
    lines = [
        TrialBalanceLine(
            account=b.account.code,
            jurisdiction=b.account.jurisdiction,
            kind=b.account.kind,
            debit=b.debit,
            credit=b.credit,
            balance=b.debit - b.credit,
        )
        for b in items
    ]
    debit = sum((b.debit for b in items), ZERO)
    credit = sum((b.credit for b in items), ZERO)
    return TrialBalance(
        as_of=as_of,
        jurisdiction=jurisdiction,
        accounts=lines,
        total_debit=debit,
        total_credit=credit,
        balanced=debit == credit,
    )
