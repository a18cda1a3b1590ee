"""What the dashboards answer: the repository's typed rows as API models (same JSON as before)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from pydantic import BaseModel, ConfigDict

from assessment.dashboard.repository import AGED, AgingGroup
from taxcore.money import SignedMoney


class AgingRow(BaseModel):
    model_config = ConfigDict(from_attributes=True)

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

    @classmethod
    def of(cls, as_of: date, groups: list[AgingGroup]) -> Aging:
        """The groups and, per bucket (and ``total``), their sum."""
        totals = {b: sum((getattr(g, b) for g in groups), Decimal(0)) for b in AGED}
        return cls(as_of=as_of, rows=[AgingRow.model_validate(g) for g in groups], totals=totals)


class Delinquent(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    tax_account: str
    jurisdiction: str
    lodging_class: str
    operator_id: str | None
    balance: SignedMoney
    periods: int
    oldest_due_date: date
    max_days_past_due: int


class MonthRow(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    month: str
    assessed: SignedMoney
    collected: SignedMoney
