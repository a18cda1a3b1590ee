from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, Field

from taxcore.money import Money, SignedMoney


class AccountBalanceOut(BaseModel):
    account: str
    jurisdiction: str
    kind: str
    name: str
    section: str | None
    balance: SignedMoney


class FundBalances(BaseModel):
    """Balances as of a date: ``distributed + pending == collected`` to the cent."""

    jurisdiction: str
    as_of: date
    accounts: list[AccountBalanceOut]
    collected: SignedMoney
    pending: SignedMoney
    distributed: SignedMoney
    conserved: bool


class MonthAllocations(BaseModel):
    month: str
    run_id: str
    collected: SignedMoney
    pending: SignedMoney
    allocations: dict[str, SignedMoney]


class AllocationsByMonth(BaseModel):
    jurisdiction: str
    fiscal_year: int
    months: list[MonthAllocations]
    totals: dict[str, SignedMoney]


class FloorStatus(BaseModel):
    annual: Money
    installments: int
    deadline: date
    owed_to_date: SignedMoney
    shortfall_to_date: SignedMoney
    on_track: bool
    met: bool
    section: str


class FundSummary(BaseModel):
    account: str
    name: str
    section: str | None
    received: SignedMoney = Field(description="in the fiscal year: the opening amount plus the runs")
    opening: SignedMoney = Field(description="of which received before the first run (the opening state)")
    floor: FloorStatus | None


class OpeningSummary(BaseModel):
    """The declared opening state the fiscal year's first run started from (go-live)."""

    id: str
    version: int
    through_month: str
    document_reference: str
    collected: Money = Field(description="what the opening state says was distributed before")
    entered_by: str
    entered_at: datetime


class DebtService(BaseModel):
    """PR §31(A): the Bank's special account against the certified amount."""

    certification_id: str | None
    certified: Money | None
    scheduled_to_date: SignedMoney
    transferred: SignedMoney
    arrears_carried: SignedMoney
    shortfall: SignedMoney
    on_track: bool


class FiscalYearSummary(BaseModel):
    jurisdiction: str
    fiscal_year: int
    months_run: int
    last_month: str | None
    collected: SignedMoney
    pending: SignedMoney
    funds: list[FundSummary]
    debt_service: DebtService | None
    opening_state: OpeningSummary | None
    on_track: bool


class TrialBalanceLine(BaseModel):
    account: str
    jurisdiction: str
    kind: str
    debit: SignedMoney
    credit: SignedMoney
    balance: SignedMoney


class TrialBalance(BaseModel):
    as_of: date | None
    jurisdiction: str | None
    accounts: list[TrialBalanceLine]
    total_debit: SignedMoney
    total_credit: SignedMoney
    balanced: bool


class LineOut(BaseModel):
    account: str
    amount: SignedMoney
    rule: str | None
    section: str | None


class EntryOut(BaseModel):
    id: int
    jurisdiction: str
    kind: str
    effective_on: date
    description: str
    event_id: str | None
    run_id: str | None
    reverses_entry_id: int | None
    lines: list[LineOut]
