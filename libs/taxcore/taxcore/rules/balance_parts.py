"""Rule 5's parts: what an account is made of, what goes in and what comes out.

The components of an account (:data:`COMPONENTS`), the facts that determine it
(:class:`AccountHistory`, :class:`PaymentIn`, :class:`AdjustmentIn`) and the statement
(:class:`Balance`) are public and re-exported by :mod:`taxcore.rules.balance`, whose
docstring states the conventions. The rest is shared by the ledger's steps
(``balance_accrual``, ``balance_payments``, ``balance_adjustments``): one bucket per
assessed amount, calendar months and ISO durations, and the parameters read (each
remembered for the trace with its section).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree, ParameterValue

COMPONENTS: tuple[str, ...] = ("tax", "impact_fee", "penalty", "interest", "fine")
"""The components of an account; every :class:`Application` names one of them."""

_PRINCIPAL: tuple[str, ...] = ("tax", "impact_fee")
_DURATION_RE = re.compile(r"^P(?=\d)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?$")
_RULE = "rule5.balance"


# --------------------------------------------------------------------------- public models


class PaymentIn(BaseModel):
    """Money received for the account.

    A reversal (dishonoured cheque, chargeback) is not a negative payment: set
    ``reversed_on`` on the original payment. From that date on the payment
    counts as never received; statements for earlier dates still show it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    payment_id: str
    received_on: date
    amount: Decimal
    reversed_on: date | None = None


AdjustmentKind = Literal["reduce", "cancel", "abate", "write_off", "returned_payment_fee"]

ADJUSTMENT_COMPONENTS: tuple[str, ...] = ("returned_payment_fee",)
"""Components that only adjustment facts create; paid after :data:`COMPONENTS` (see the fee's note)."""

_REDUCIBLE: tuple[str, ...] = ("tax", "impact_fee", "fine")
_ABATABLE: tuple[str, ...] = ("penalty", "interest", "fine")


class AdjustmentIn(BaseModel):
    """An approved case fact that changes what the account owes (append-only).

    Each is decided by a person (``approved_by``; ``proposed_by`` when a second
    person proposed it) for a reason and under a section, and counts from
    ``effective_on``: a statement as of an earlier date ignores it.

    * ``reduce`` (a decision): ``component`` (tax, impact_fee or fine) is
      reduced *to* ``amount``. A decision corrects the assessment itself, so
      for statements from ``effective_on`` the account is recomputed as if the
      component had always been that amount: penalties and interest follow.
    * ``cancel`` (a decision): the assessment is void — principal and fines are
      0 for statements from ``effective_on``; payments become a credit.
    * ``abate``: ``amount`` of ``component`` (penalty, interest or fine) is
      forgiven on ``effective_on``; what accrued before stays on the record,
      later accrual continues on what is still owed. Never more than what is
      outstanding of the component that day.
    * ``write_off``: everything outstanding on ``effective_on`` is written off;
      from then nothing accrues and nothing is owed. ``reversed_on`` (money
      appeared): from that day the written-off amounts are owed again and
      accrual resumes (the days in between stay free of accrual).
    * ``returned_payment_fee``: a charge of ``amount`` on ``effective_on`` (the
      day a payment was returned), its own component; it bears no interest.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fact_id: str
    kind: AdjustmentKind
    effective_on: date
    component: str | None = None
    amount: Decimal | None = None
    reversed_on: date | None = None
    section: str
    reason: str
    approved_by: str
    proposed_by: str | None = None


class AdjustmentApplied(BaseModel):
    """What an adjustment fact did to the statement (``amount``: the change in what is owed)."""

    model_config = ConfigDict(extra="forbid")

    fact_id: str
    kind: str
    component: str | None
    effective_on: date
    amount: Decimal
    section: str
    reason: str
    approved_by: str
    proposed_by: str | None
    reversed_on: date | None = None


class AccountHistory(BaseModel):
    """Everything that determines one account's balance at any date."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: str
    period: str
    due_date: date | None = None
    tax: Decimal
    impact_fee: Decimal = Decimal("0")
    declaration_filed_on: date | None = None
    books_kept: bool = True
    bond_cover: Decimal = Decimal("0")
    deficiency_assessed_on: date | None = None
    payments: list[PaymentIn] = Field(default_factory=list)
    adjustments: list[AdjustmentIn] = Field(default_factory=list)


class Application(BaseModel):
    """Part of a payment applied to one component (one of :data:`COMPONENTS`)."""

    model_config = ConfigDict(extra="forbid")

    payment_id: str
    component: str
    amount: Decimal
    section: str


class ComponentBalance(BaseModel):
    """Assessed, paid and outstanding amount of one component as of the statement date."""

    model_config = ConfigDict(extra="forbid")

    component: str
    assessed: Decimal
    paid: Decimal
    outstanding: Decimal
    #: abated or written off (adjustment facts): outstanding = assessed - adjusted - paid
    adjusted: Decimal = Decimal("0")


class Balance(BaseModel):
    """The account as of ``as_of``: ``balance`` owed or ``credit`` overpaid (never both)."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: str
    period: str
    due_date: date
    as_of: date
    components: list[ComponentBalance]
    total_assessed: Decimal
    total_paid: Decimal
    balance: Decimal
    credit: Decimal
    days_late: int
    applications: list[Application]
    trace: list[dict[str, Any]]
    #: abated and written off as of ``as_of`` (balance = total_assessed - total_adjusted - total_paid)
    total_adjusted: Decimal = Decimal("0")
    #: part of ``total_adjusted`` written off (collection stopped), 0 when no write-off is in force
    written_off: Decimal = Decimal("0")
    adjustments: list[AdjustmentApplied] = Field(default_factory=list)


# --------------------------------------------------------------------------- dates


def add_months(d: date, months: int) -> date:
    """``d`` plus whole calendar months, clamped to the end of the month (Jan 31 + 1 = Feb 28/29)."""
    index = d.year * 12 + (d.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def _add_duration(d: date, text: str, *, path: str) -> date:
    match = _DURATION_RE.match(text)
    if match is None:
        raise ParameterError(path, f"{text!r} is not a duration like P30D, P2M or P1Y")
    years, months, days = (int(g) if g else 0 for g in match.groups())
    return add_months(d, 12 * years + months) + timedelta(days=days)


def _year_days(year: int) -> int:
    return 366 if calendar.isleap(year) else 365


# --------------------------------------------------------------------------- parameters


class _Params:
    """Reads the parameters of one computation and remembers them for the trace."""

    def __init__(self, tree: ParameterTree, jurisdiction: str, on: date) -> None:
        self.tree = tree
        self.jurisdiction = jurisdiction
        self.on = on
        self.used: dict[str, Any] = {}

    def has(self, path: str) -> bool:
        found: bool = self.tree.has(self.jurisdiction, path)
        return found

    def get(self, path: str) -> ParameterValue:
        pv = self.tree.get(self.jurisdiction, path, self.on)
        entry: dict[str, Any] = {"value": pv.value, "section": pv.section}
        if pv.provisional:
            entry["provisional"] = True
            entry["note"] = pv.note
        self.used[path] = entry
        return pv

    def decimal(self, path: str) -> Decimal:
        v = self.get(path).value
        if isinstance(v, bool) or not isinstance(v, Decimal):
            raise ParameterError(path, f"{self.jurisdiction} {path} must be a number, got {v!r}")
        return v

    def text(self, path: str) -> str:
        v = self.get(path).value
        if not isinstance(v, str):
            raise ParameterError(path, f"{self.jurisdiction} {path} must be a string, got {v!r}")
        return v

    def components(self, path: str) -> list[str]:
        v = self.get(path).value
        if not isinstance(v, list) or not all(isinstance(c, str) and c in COMPONENTS for c in v):
            raise ParameterError(
                path, f"{self.jurisdiction} {path} must list components of {COMPONENTS}, got {v!r}"
            )
        return [str(c) for c in v]

    def section(self, path: str) -> str:
        section: str = self.get(path).section
        return section


# --------------------------------------------------------------------------- buckets


@dataclass
class _Bucket:
    """One assessed amount of the account, accrued exactly, stated to the cent."""

    component: str
    key: str
    section: str
    exact: Decimal = ZERO
    paid: Decimal = ZERO
    adjusted: Decimal = ZERO  # abated or written off (adjustment facts)

    @property
    def assessed(self) -> Decimal:
        stated: Decimal = round_cents(self.exact)
        return stated

    @property
    def outstanding(self) -> Decimal:
        return self.assessed - self.adjusted - self.paid


def _cents(value: Decimal, field: str, *, positive: bool = False) -> Decimal:
    if not value.is_finite():
        raise InvalidInput(field, "must be a finite amount")
    if value != round_cents(value):
        raise InvalidInput(field, f"must be in whole cents, got {value}")
    if value < 0 or (positive and value == 0):
        raise InvalidInput(field, "must be positive" if positive else "must not be negative")
    return value
