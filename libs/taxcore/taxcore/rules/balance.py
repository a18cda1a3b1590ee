"""Rule 5 — what a lodging owes for one monthly period, as of any date.

An account (one lodging, one period) starts with its principal — the tax
(PR §24, §28; VI §54(b)(1)) and, in the Virgin Islands, the timeshare impact
fee (§54(b)(3)) — due on the period's due date. From the day after the due
date the law adds charges on what is still unpaid:

* a late-payment penalty graded by delay on the unpaid principal
  (VI §54(i)(1)-(5); PR §46 surcharge, provisional percentages);
* interest (VI §54(i)(6): 1% a month, compounding, on principal and penalties;
  PR §46 provisional 10% a year simple, replaced from a deficiency notice by
  §33: 10% a year on the deficiency the bond does not cover);
* fines (PR §47: $500 per day the declaration is late, capped at $25,000;
  VI §54(l): $100 per period without separate books, assessed from the day
  after the due date so that it never takes a timely payment of the tax).

Penalties and interest accrue on what remained unpaid at each moment, so
:func:`compute_balance` walks the account's timeline: every payment date, the
first day of each penalty tier, each interest-month end (VI) or year end (PR),
the deficiency notice (PR) and the statement date ``as_of``. At each date it
accrues interest up to and including that day on the balance of the day
before, raises the penalty to the tier reached, then applies the money
received that day in the order of ``payments.application_order``. Interest
months that pass whole with nothing else happening (no payment, tier, notice or fact,
nothing left to assess) are accrued in one step, with the same amounts and trace steps as
walking each month end (``_Ledger._accrue_whole_months``), so a statement's cost does not
grow with the months an account stays unpaid.

Conventions (documented once, used everywhere):

* Day 1 of lateness is the first day after the due date; a payment received on
  the due date is on time. A tier ``after: P30D`` applies from day 31.
* Penalty by tranche: each part of the principal bears the penalty rate of the
  tier reached on the day that part was paid (or on ``as_of`` if still unpaid);
  a penalty once incurred is never undone by a later payment.
* Amounts accrue in full precision and are rounded half-up to the cent when
  they are stated: when a payment is applied to them and on the statement.
* A charge bears interest from the day after it arises. Fines bear none.
* PR: from the day after a deficiency notice (``deficiency_assessed_on``) §33
  interest on (unpaid tax + surcharge - ``bond_cover``) replaces the §46
  interest; ``bond_cover`` is not a payment, it only shelters that part from
  interest (a charge actually made against the bond is a payment).
* Payments received after ``as_of`` are ignored, and so is a payment reversed
  (e.g. a dishonoured cheque) on or before ``as_of``: it is treated as never
  received, so penalties and interest run as if it had not been made. A
  statement for a past date therefore does not depend on when it is computed.
* Money left after everything assessed is paid is a credit, applied to later
  charges of the same account (e.g. PR §47 fines that keep accruing).
* Parameters are read as in force on the due date.

Adjustment facts (case work: decisions, abatements, write-offs, fees) are
approved, append-only :class:`AdjustmentIn` rows; see "adjustment facts" below.
A statement as of a date before a fact's ``effective_on`` is unchanged by it.
"""

from __future__ import annotations

import calendar
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, getcontext
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree, ParameterValue, default_tree
from taxcore.periods import Period
from taxcore.periods import due_date as period_due_date
from taxcore.trace import NullTrace, Trace

__all__ = [
    "COMPONENTS",
    "ADJUSTMENT_COMPONENTS",
    "AccountHistory",
    "AdjustmentApplied",
    "AdjustmentIn",
    "Application",
    "Balance",
    "ComponentBalance",
    "PaymentIn",
    "add_months",
    "compute_balance",
]

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


# --------------------------------------------------------------------------- the ledger


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


@dataclass(frozen=True)
class _Tier:
    starts: date  # first day the tier applies
    rate: Decimal
    after: str
    section: str


@dataclass
class _Money:
    payment_id: str
    remaining: Decimal


def _cents(value: Decimal, field: str, *, positive: bool = False) -> Decimal:
    if not value.is_finite():
        raise InvalidInput(field, "must be a finite amount")
    if value != round_cents(value):
        raise InvalidInput(field, f"must be in whole cents, got {value}")
    if value < 0 or (positive and value == 0):
        raise InvalidInput(field, "must be positive" if positive else "must not be negative")
    return value


# --------------------------------------------------------------------------- adjustment facts
#
# Case work (decisions, abatements, write-offs, returned-payment fees) enters the
# ledger through these hooks only; the walk above calls them at fixed points:
# ``_validate`` -> _validate_adjustments, ``_load_rules`` -> _decide_principal,
# ``_events`` -> _adjustment_dates, ``_assess_at`` -> _paused_days/_cap_fines,
# ``run`` -> _adjust_at (after accrual and assessment of a day, before its payments).


@dataclass
class _WriteOff:
    fact: AdjustmentIn
    amounts: list[tuple[_Bucket, Decimal]]
    frozen: Decimal  # penalty fixed on the principal written off (tranche rule)


class _AdjustmentsMixin:
    history: AccountHistory
    as_of: date
    due: date
    trace: Trace | NullTrace
    buckets: dict[str, list[_Bucket]]
    tax: _Bucket
    fee: _Bucket
    penalty: _Bucket
    late_fine: _Bucket | None
    books_fine: _Bucket | None
    penalty_bears: list[str]
    frozen_penalty: Decimal
    rate_now: Decimal

    def _init_adjustments(self) -> None:
        self.adjustments_applied: list[AdjustmentApplied] = []
        self.writeoffs_active: list[_WriteOff] = []
        self.fine_cap_decided: Decimal | None = None
        self.fine_decision_index: int | None = None

    def _counted(self) -> list[tuple[int, AdjustmentIn]]:
        facts = [(i, a) for i, a in enumerate(self.history.adjustments) if a.effective_on <= self.as_of]
        return sorted(facts, key=lambda x: (x[1].effective_on, x[0]))

    def _validate_adjustments(self) -> None:
        seen: set[str] = set()
        for i, a in enumerate(self.history.adjustments):
            at = f"adjustments[{i}]"
            if a.fact_id in seen:
                raise InvalidInput(f"{at}.fact_id", f"duplicate {a.fact_id!r}")
            seen.add(a.fact_id)
            if a.kind in ("cancel", "write_off"):
                if a.component is not None or a.amount is not None:
                    raise InvalidInput(f"{at}.component", f"a {a.kind} takes neither component nor amount")
            else:
                if a.amount is None:
                    raise InvalidInput(f"{at}.amount", f"a {a.kind} needs an amount")
                _cents(a.amount, f"{at}.amount", positive=a.kind != "reduce")
                allowed = {"reduce": _REDUCIBLE, "abate": _ABATABLE}.get(a.kind)
                if allowed is not None and a.component not in allowed:
                    raise InvalidInput(f"{at}.component", f"a {a.kind} applies to one of {allowed}")
                if a.kind == "returned_payment_fee" and a.component not in (None, "returned_payment_fee"):
                    raise InvalidInput(f"{at}.component", "a returned-payment fee is its own component")
            if a.reversed_on is not None:
                if a.kind != "write_off":
                    raise InvalidInput(f"{at}.reversed_on", "only a write-off is reversed")
                if a.reversed_on < a.effective_on:
                    raise InvalidInput(f"{at}.reversed_on", "is before effective_on")
            if a.kind == "reduce" and a.amount is not None and a.component in ("tax", "impact_fee"):
                declared = self.history.tax if a.component == "tax" else self.history.impact_fee
                if a.amount > declared:
                    raise InvalidInput(
                        f"{at}.amount", f"{a.amount} is more than the {a.component} assessed ({declared})"
                    )

    def _record(self, a: AdjustmentIn, amount: Decimal, text: str) -> None:
        self.adjustments_applied.append(
            AdjustmentApplied(
                fact_id=a.fact_id,
                kind=a.kind,
                component=a.component,
                effective_on=a.effective_on,
                amount=amount,
                section=a.section,
                reason=a.reason,
                approved_by=a.approved_by,
                proposed_by=a.proposed_by,
                reversed_on=a.reversed_on if a.reversed_on and a.reversed_on <= self.as_of else None,
            )
        )
        self.trace.add(
            f"{_RULE}.adjustment.{a.kind}",
            a.section,
            f"{a.effective_on.isoformat()}: {text}; approved by {a.approved_by}"
            + (f", proposed by {a.proposed_by}" if a.proposed_by else "")
            + f" ({a.reason})",
            amount,
            inputs={
                "fact_id": a.fact_id,
                "kind": a.kind,
                "component": a.component,
                "amount": a.amount,
                "effective_on": a.effective_on,
                "reversed_on": a.reversed_on,
                "reason": a.reason,
                "approved_by": a.approved_by,
                "proposed_by": a.proposed_by,
            },
        )

    # ----------------------------------------------------------------- decisions (retroactive)

    def _decide_principal(self) -> None:
        """Decisions in force on ``as_of`` restate the assessment from the due date (the latest wins)."""
        decided: dict[str, tuple[AdjustmentIn, Decimal]] = {}
        for _, a in self._counted():
            if a.kind == "cancel":
                decided = {c: (a, ZERO) for c in _REDUCIBLE}
            elif a.kind == "reduce" and a.component is not None and a.amount is not None:
                decided[a.component] = (a, a.amount)
        recorded: set[str] = set()
        for component, (a, amount) in decided.items():
            if component == "fine":
                self.fine_cap_decided = amount
                if a.kind == "reduce":
                    self.fine_decision_index = len(self.adjustments_applied)
                change = None
            else:
                bucket = self.tax if component == "tax" else self.fee
                change = bucket.exact - amount
                bucket.exact = amount
            if a.kind == "reduce":
                what = "fines" if component == "fine" else component
                effect = -change if change is not None else ZERO  # fines: set by _cap_fines
                self._record(a, effect, f"decision reduces the {what} to {amount}")
            elif a.fact_id not in recorded:
                recorded.add(a.fact_id)
                voided = self.history.tax + self.history.impact_fee
                self._record(a, -voided, "decision cancels the assessment (principal and fines)")

    def _cap_fines(self) -> None:
        if self.fine_cap_decided is None:
            return
        room = self.fine_cap_decided
        uncapped = sum((b.assessed for b in self.buckets["fine"]), ZERO)
        for bucket in self.buckets["fine"]:
            bucket.exact = min(bucket.exact, room)
            room -= bucket.exact
        if self.fine_decision_index is not None:  # the decision's effect is what it took off the fines
            capped = sum((b.assessed for b in self.buckets["fine"]), ZERO)
            self.adjustments_applied[self.fine_decision_index].amount = capped - uncapped

    # ----------------------------------------------------------------- on a day (prospective)

    def _adjustment_dates(self) -> set[date]:
        dates: set[date] = set()
        for a in self.history.adjustments:
            if a.kind in ("abate", "write_off", "returned_payment_fee") and a.effective_on <= self.as_of:
                dates.add(a.effective_on)
            if a.reversed_on is not None and a.reversed_on <= self.as_of:
                dates.add(a.reversed_on)
        return dates

    def _paused_days(self, until: date) -> int:
        """Days in (write-off, its reversal or ``until``]: no fine accrues on them."""
        days = 0
        for a in self.history.adjustments:
            if a.kind != "write_off" or a.effective_on > self.as_of or a.effective_on >= until:
                continue
            end = until if a.reversed_on is None or a.reversed_on > self.as_of else min(a.reversed_on, until)
            days += max(0, (end - max(a.effective_on, self.due)).days)
        return days

    def _adjust_at(self, day: date) -> bool:
        """Apply the facts effective on ``day``; True when a reversal asks to assess the day again."""
        reinstated = False
        for w in list(self.writeoffs_active):
            if w.fact.reversed_on == day:
                self._reinstate(w)
                reinstated = True
        for i, a in self._counted():
            if a.effective_on != day:
                continue
            if a.kind == "abate":
                self._abate(i, a)
            elif a.kind == "returned_payment_fee":
                self._charge_fee(a)
            elif a.kind == "write_off":
                self._write_off(a)
                if a.reversed_on == day:
                    self._reinstate(self.writeoffs_active[-1])
                    reinstated = True
        return reinstated

    def _abate(self, i: int, a: AdjustmentIn) -> None:
        assert a.component is not None  # checked in _validate_adjustments
        assert a.amount is not None
        buckets = self.buckets[a.component]
        available = sum((max(ZERO, b.outstanding) for b in buckets), ZERO)
        amount = a.amount
        if amount > available and self._decided_after(a.effective_on):
            # a later decision restated the account: the abatement keeps what is left to abate
            amount = available
        elif amount > available:
            raise InvalidInput(
                f"adjustments[{i}].amount",
                f"abates {a.amount} but only {available} of the {a.component} is outstanding "
                f"on {a.effective_on.isoformat()}",
            )
        left = amount
        for bucket in buckets:
            take = min(left, max(ZERO, bucket.outstanding))
            bucket.adjusted += take
            left -= take
        limited = f" (limited from {a.amount} by a later decision)" if amount != a.amount else ""
        self._record(a, -amount, f"abatement of {amount} of the {a.component}{limited}")

    def _decided_after(self, day: date) -> bool:
        return any(a.kind in ("reduce", "cancel") and a.effective_on > day for _, a in self._counted())

    def _charge_fee(self, a: AdjustmentIn) -> None:
        assert a.amount is not None
        bucket = _Bucket("returned_payment_fee", f"returned_payment_fee:{a.fact_id}", a.section)
        self.buckets.setdefault("returned_payment_fee", []).append(bucket)
        bucket.exact = a.amount
        self._record(a, a.amount, f"returned-payment fee {a.amount}")

    def _write_off(self, a: AdjustmentIn) -> None:
        amounts: list[tuple[_Bucket, Decimal]] = []
        frozen = ZERO
        for component, buckets in self.buckets.items():
            for bucket in buckets:
                take = max(ZERO, bucket.outstanding)
                if take == 0:
                    continue
                bucket.adjusted += take
                amounts.append((bucket, take))
                if component in _PRINCIPAL and component in self.penalty_bears:
                    frozen += take * self.rate_now
        self.frozen_penalty += frozen
        total = sum((t for _, t in amounts), ZERO)
        self.writeoffs_active.append(_WriteOff(a, amounts, frozen))
        self._record(a, -total, f"write-off of {total} outstanding; accrual and collection stop")

    def _reinstate(self, w: _WriteOff) -> None:
        for bucket, take in w.amounts:
            bucket.adjusted -= take
        self.frozen_penalty -= w.frozen
        self.writeoffs_active.remove(w)
        total = sum((t for _, t in w.amounts), ZERO)
        self.trace.add(
            f"{_RULE}.adjustment.write_off_reversed",
            w.fact.section,
            f"{w.fact.reversed_on}: write-off {w.fact.fact_id} reversed, {total} owed again; accrual resumes",
            total,
            inputs={"fact_id": w.fact.fact_id, "reversed_on": w.fact.reversed_on},
        )

    def _written_off_now(self) -> Decimal:
        return sum((t for w in self.writeoffs_active for _, t in w.amounts), ZERO)

    def _stated_components(self) -> tuple[str, ...]:
        extra = tuple(c for c in ADJUSTMENT_COMPONENTS if self.buckets.get(c))
        return (*COMPONENTS, *extra)


class _Ledger(_AdjustmentsMixin):
    def __init__(
        self,
        history: AccountHistory,
        as_of: date,
        tree: ParameterTree,
        *,
        explain: bool = True,
        whole_months: bool = True,
    ) -> None:
        self.history = history
        self.whole_months = whole_months  # False: the reference walk, one ledger day per interest month
        self.as_of = as_of
        self.trace = Trace() if explain else NullTrace()
        self.jurisdiction = history.jurisdiction
        period = Period.parse(history.period)
        self.period = period
        self.due = history.due_date or period_due_date(history.jurisdiction, period, parameters=tree)
        self.p = _Params(tree, history.jurisdiction, self.due)
        self._init_adjustments()
        self._validate()
        self._load_rules()
        self.last = self.due  # interest has accrued through this day
        self.processed = self.due  # the last day walked (month ends before it are done)
        self.frozen_penalty = ZERO
        self.capitalized = ZERO
        self.pool: list[_Money] = []
        self.applications: list[Application] = []
        self.cleared_on: date | None = None
        self.rate_now = ZERO

    # ----------------------------------------------------------------- setup

    def _validate(self) -> None:
        h = self.history
        _cents(h.tax, "tax")
        _cents(h.impact_fee, "impact_fee")
        _cents(h.bond_cover, "bond_cover")
        seen: set[str] = set()
        for i, pay in enumerate(h.payments):
            _cents(pay.amount, f"payments[{i}].amount", positive=True)
            if pay.payment_id in seen:
                raise InvalidInput(f"payments[{i}].payment_id", f"duplicate {pay.payment_id!r}")
            seen.add(pay.payment_id)
            if pay.reversed_on is not None and pay.reversed_on < pay.received_on:
                raise InvalidInput(f"payments[{i}].reversed_on", "is before received_on")
        self._validate_adjustments()

    def _load_rules(self) -> None:
        p = self.p
        self.order = p.components("payments.application_order")
        if sorted(self.order) != sorted(COMPONENTS):
            raise ParameterError("payments.application_order", f"must list each of {COMPONENTS} once")
        principal_sections = p.get("payments.principal_sections").value
        if not isinstance(principal_sections, dict):
            raise ParameterError("payments.principal_sections", "must map component -> section")
        if self.history.impact_fee > 0 and "impact_fee" not in principal_sections:
            raise InvalidInput("impact_fee", f"{self.jurisdiction} levies no impact fee")

        self.tiers: list[_Tier] = []
        self.mode = "replace"
        self.penalty_bears: list[str] = []
        if p.has("penalties.late_payment_tiers"):
            raw = p.get("penalties.late_payment_tiers").value
            if not isinstance(raw, list):
                raise ParameterError("penalties.late_payment_tiers", "must be a list of tiers")
            for item in raw:
                if not isinstance(item, dict) or not isinstance(item.get("rate"), Decimal):
                    raise ParameterError("penalties.late_payment_tiers", f"bad tier {item!r}")
                after = str(item.get("after"))
                starts = _add_duration(self.due, after, path="penalties.late_payment_tiers")
                self.tiers.append(
                    _Tier(starts + timedelta(days=1), item["rate"], after, str(item["section"]))
                )
            self.tiers.sort(key=lambda t: t.starts)
            self.mode = p.text("penalties.tier_mode")
            if self.mode not in ("replace", "cumulative"):
                raise ParameterError("penalties.tier_mode", f"unknown mode {self.mode!r}")
            if self.mode == "replace" and any(
                a.rate > b.rate for a, b in zip(self.tiers, self.tiers[1:], strict=False)
            ):
                raise ParameterError("penalties.late_payment_tiers", "rates must not decrease (replace mode)")
            self.penalty_bears = p.components("penalties.late_payment_bears_on")
        penalty_section = (
            p.section("penalties.late_payment_tiers") if self.tiers else "no late-payment penalty"
        )

        self.interest_method = p.text("penalties.interest_method")
        if self.interest_method not in ("monthly_compound", "annual_simple"):
            raise ParameterError("penalties.interest_method", f"unknown method {self.interest_method!r}")
        self.interest_rate = p.decimal("penalties.interest_rate")
        self.interest_bears = p.components("penalties.interest_bears_on")

        self.notice: date | None = None
        if p.has("penalties.deficiency_interest_rate"):
            self.deficiency_rate = p.decimal("penalties.deficiency_interest_rate")
            self.deficiency_bears = p.components("penalties.deficiency_interest_bears_on")
            self.notice = self.history.deficiency_assessed_on
        elif self.history.deficiency_assessed_on is not None or self.history.bond_cover > 0:
            self._note("deficiency_assessed_on and bond_cover have no effect here (no §33-like rule)")

        self.buckets: dict[str, list[_Bucket]] = {c: [] for c in COMPONENTS}
        self.tax = self._bucket("tax", "tax", str(principal_sections.get("tax", "")))
        self.tax.exact = round_cents(self.history.tax)
        self.fee = self._bucket("impact_fee", "impact_fee", str(principal_sections.get("impact_fee", "")))
        self.fee.exact = round_cents(self.history.impact_fee)
        self.penalty = self._bucket("penalty", "late_payment_penalty", penalty_section)
        self.interest = self._bucket("interest", "interest", p.section("penalties.interest_rate"))
        self.deficiency_interest: _Bucket | None = None
        if self.notice is not None:
            self.deficiency_interest = self._bucket(
                "interest", "deficiency_interest", p.section("penalties.deficiency_interest_rate")
            )

        self.late_fine: _Bucket | None = None
        if p.has("penalties.late_declaration_fine_per_day"):
            self.fine_per_day = p.decimal("penalties.late_declaration_fine_per_day")
            self.fine_cap = p.decimal("penalties.late_declaration_fine_cap")
            self.late_fine = self._bucket(
                "fine", "late_declaration_fine", p.section("penalties.late_declaration_fine_per_day")
            )
        self.books_fine: _Bucket | None = None
        self.books_fine_amount = ZERO
        if p.has("penalties.no_books_fine_per_period"):
            self.books_fine_amount = p.decimal("penalties.no_books_fine_per_period")
            self.books_fine = self._bucket(
                "fine", "no_books_fine", p.section("penalties.no_books_fine_per_period")
            )
        elif not self.history.books_kept:
            self._note("books_kept=false has no effect here (no per-period books fine)")
        self._decide_principal()

    def _bucket(self, component: str, key: str, section: str) -> _Bucket:
        bucket = _Bucket(component, key, section)
        self.buckets[component].append(bucket)
        return bucket

    def _note(self, text: str) -> None:
        self.trace.add(f"{_RULE}.note", "", text, None)

    # ----------------------------------------------------------------- timeline

    def _month_index(self, day: date) -> int:
        """The interest month k, (due + k-1 months, due + k months], that contains ``day`` (> due date)."""
        k = max(1, (day.year - self.due.year) * 12 + day.month - self.due.month)
        while add_months(self.due, k) < day:
            k += 1
        while k > 1 and add_months(self.due, k - 1) >= day:
            k -= 1
        return k

    def _month_bounds(self, day: date) -> tuple[date, date]:
        """The interest month (start, end] that contains ``day`` (> due date)."""
        k = self._month_index(day)
        return add_months(self.due, k - 1), add_months(self.due, k)

    def _events(self, payments: list[PaymentIn]) -> list[date]:
        dates = {self.as_of}
        dates.update(pay.received_on for pay in payments)
        dates.update(t.starts for t in self.tiers if t.starts <= self.as_of)
        if self.interest_method == "monthly_compound":
            k = 1  # with whole_months, run() reaches the month ends between these dates itself
            while not self.whole_months and (boundary := add_months(self.due, k)) <= self.as_of:
                dates.add(boundary)
                k += 1
        else:
            for year in range(self.due.year, self.as_of.year + 1):
                if self.due < (year_end := date(year, 12, 31)) <= self.as_of:
                    dates.add(year_end)
        if self.notice is not None and self.due < self.notice <= self.as_of:
            dates.add(self.notice)
        dates.update(self._adjustment_dates())
        return sorted(dates)

    def _tier_rate(self, day: date) -> tuple[Decimal, list[_Tier]]:
        reached = [t for t in self.tiers if day >= t.starts]
        if not reached:
            return ZERO, []
        if self.mode == "cumulative":
            return sum((t.rate for t in reached), ZERO), reached
        return reached[-1].rate, reached[-1:]

    def _principal_outstanding(self, component: str) -> Decimal:
        return self.tax.outstanding if component == "tax" else self.fee.outstanding

    def _outstanding(self, components: list[str]) -> Decimal:
        total: Decimal = ZERO
        for c in components:
            if c in _PRINCIPAL:
                total += self._principal_outstanding(c)
            elif c == "penalty":
                total += max(ZERO, self.penalty.outstanding)
            elif c == "fine":
                total += sum((max(ZERO, b.outstanding) for b in self.buckets["fine"]), ZERO)
            elif c == "interest":
                total += sum((max(ZERO, b.outstanding) for b in self.buckets["interest"]), ZERO)
        return total

    def _accrue_to(self, day: date) -> None:
        start = max(self.last, self.due)
        if day <= start:
            return
        self.last = day
        days = (day - start).days
        if self.deficiency_interest is not None and self.notice is not None and start >= self.notice:
            bucket = self.deficiency_interest
            gross = self._outstanding(self.deficiency_bears)
            base = max(ZERO, gross - self.history.bond_cover)
            rate = self.deficiency_rate
            inputs: dict[str, Any] = {"deficiency": gross, "bond_cover": self.history.bond_cover}
        else:
            bucket = self.interest
            base = self._outstanding(self.interest_bears)
            rate = self.interest_rate
            inputs = {}
            if self.interest_method == "monthly_compound":
                capitalized = max(
                    ZERO, round_cents(self.capitalized) - self.interest.paid - self.interest.adjusted
                )
                base += capitalized
                inputs["capitalized_interest"] = capitalized
        if self.interest_method == "monthly_compound":
            month_start, month_end = self._month_bounds(start + timedelta(days=1))
            length = (month_end - month_start).days
            unit = f"interest month ending {month_end.isoformat()}"
        else:
            year = (start + timedelta(days=1)).year
            length = _year_days(year)
            unit = f"year {year}"
        if base == 0:
            return
        amount = base * rate * days / length
        bucket.exact += amount
        self._trace_interest(bucket, start, day, base, rate, length, unit, amount, inputs)

    def _trace_interest(
        self,
        bucket: _Bucket,
        start: date,
        day: date,
        base: Decimal,
        rate: Decimal,
        length: int,
        unit: str,
        amount: Decimal,
        inputs: dict[str, Any],
    ) -> None:
        days = (day - start).days
        self.trace.add(
            f"{_RULE}.interest",
            bucket.section,
            f"{bucket.key} on {base} for {days} of the {length} days of the {unit}: "
            f"{base} x {rate} x {days}/{length}",
            amount,
            inputs={"from": start + timedelta(days=1), "to": day, "base": base, **inputs},
            parameters={"rate": rate, "days_in_unit": length},
        )

    def _whole_months_quiet(self, k: int) -> bool:
        """Nothing but §54(i)(6)-like compounding can change on the month ends from k on.

        True when interest month k starts where the accrual stands (a whole month), the
        interest is the ordinary one (no deficiency rule in force, interest not bearing
        itself except through capitalization), no fine still grows by the day or waits to be
        assessed, and no money waits in the pool for what accrues (a credit is only left
        when nothing is outstanding, so then nothing accrues either). On such a month end
        the walk would accrue, capitalize and apply nothing else: tier starts, payments and
        adjustment facts are days of their own.
        """
        if max(self.last, self.due) != add_months(self.due, k - 1):
            return False
        if self.deficiency_interest is not None and self.notice is not None and self.last >= self.notice:
            return False
        if "interest" in self.interest_bears:
            return False
        if self.late_fine is not None:
            filed = self.history.declaration_filed_on
            if filed is None or filed > self.processed:
                return False
        if self.books_fine is not None and not self.history.books_kept and self.books_fine.exact == 0:
            return False
        return not self.pool or self._compounding_base() == 0

    def _compounding_base(self) -> Decimal:
        capitalized = max(ZERO, round_cents(self.capitalized) - self.interest.paid - self.interest.adjusted)
        return self._outstanding(self.interest_bears) + capitalized

    def _accrue_whole_months(self, first: int, last: int) -> None:
        """Interest months ``first``..``last``, each whole, in one step (VI §54(i)(6)).

        Over a whole month the walk accrues base x rate x days/days = base x rate, then
        capitalizes: the next month's base is the unpaid principal and penalties plus the
        interest capitalized, stated to the cent, less what of it was paid or abated. The
        principal and penalties stay as they are over these months (see
        :meth:`_whole_months_quiet`), so each month costs a few Decimal operations; a base of
        0 stays 0 and ends the loop. Not a power formula: (1 + rate)^n would skip the
        capitalized interest's rounding to the cent each month and drift by cents over years.
        The trace (when kept) has the same step per month as the month-by-month walk.
        """
        interest = self.interest
        rate = self.interest_rate
        principal = self._outstanding(self.interest_bears)
        settled = interest.paid + interest.adjusted
        explain = not isinstance(self.trace, NullTrace)
        # base (in cents) x rate x days is exact below this, so x days / days gives base x rate back
        exact_below = Decimal(10) ** (getcontext().prec - len(rate.as_tuple().digits) - 4)
        for k in range(first, last + 1):
            capitalized = max(ZERO, round_cents(self.capitalized) - settled)
            base = principal + capitalized
            if base == 0:
                break
            if explain or base >= exact_below:
                start, end = add_months(self.due, k - 1), add_months(self.due, k)
                length = (end - start).days
                amount = base * rate * length / length
                unit = f"interest month ending {end.isoformat()}"
                self._trace_interest(
                    interest,
                    start,
                    end,
                    base,
                    rate,
                    length,
                    unit,
                    amount,
                    {"capitalized_interest": capitalized},
                )
            else:
                amount = base * rate
            interest.exact += amount
            self.capitalized = interest.exact
        self.last = self.processed = add_months(self.due, last)

    def _month_ends_before(self, day: date, arriving: dict[date, list[PaymentIn]]) -> None:
        """The interest-month ends after the last day walked and before ``day``: each walked as a
        day of its own until the months are whole and quiet, then all at once."""
        if self.interest_method != "monthly_compound" or day <= self.due:
            return
        k = self._month_index(self.processed + timedelta(days=1)) if self.processed > self.due else 1
        end = add_months(self.due, k)
        while end < day:
            if self._whole_months_quiet(k):
                self._accrue_whole_months(k, self._month_index(day) - 1)
                return
            self._walk_day(end, arriving)
            k += 1
            end = add_months(self.due, k)

    def _assess_at(self, day: date) -> None:
        rate, reached = self._tier_rate(day)
        if rate != self.rate_now:
            self.trace.add(
                f"{_RULE}.penalty_tier",
                "; ".join(t.section for t in reached),
                f"from {day.isoformat()} the unpaid principal bears {rate} ({self.mode})",
                rate,
                inputs={"day_late": (day - self.due).days},
                parameters={"tiers": [t.after for t in reached], "mode": self.mode},
            )
            self.rate_now = rate
        unpaid = sum((self._principal_outstanding(c) for c in self.penalty_bears), ZERO)
        before = self.penalty.assessed
        self.penalty.exact = self.frozen_penalty + unpaid * rate
        if self.penalty.assessed != before:
            self.trace.add(
                f"{_RULE}.penalty",
                self.penalty.section,
                f"penalty: {rate} of the unpaid principal {unpaid}, plus {round_cents(self.frozen_penalty)}"
                " fixed on principal paid earlier",
                self.penalty.assessed,
                inputs={"unpaid_principal": unpaid, "fixed_on_paid": self.frozen_penalty},
                parameters={"rate": rate},
            )
        if (
            self.books_fine is not None
            and not self.history.books_kept
            and day > self.due
            and self.books_fine.exact == 0
        ):
            self.books_fine.exact = self.books_fine_amount
            self.trace.add(
                f"{_RULE}.no_books_fine",
                self.books_fine.section,
                "no separate books or records for the period: fine per tax period "
                "(assessed once the period's return is due, so it never takes a timely "
                "payment of the tax)",
                self.books_fine.assessed,
                parameters={"per_period": self.books_fine_amount},
            )
        if self.late_fine is not None:
            filed = self.history.declaration_filed_on
            end = filed if filed is not None and filed <= day else day
            days_late = max(0, (end - self.due).days - self._paused_days(end))
            before = self.late_fine.assessed
            self.late_fine.exact = min(self.fine_per_day * days_late, self.fine_cap)
            if self.late_fine.assessed != before:
                self.trace.add(
                    f"{_RULE}.late_declaration_fine",
                    self.late_fine.section,
                    f"declaration {days_late} days late "
                    f"({'filed ' + filed.isoformat() if filed and filed <= day else 'not filed'})"
                    f": min({self.fine_per_day} x {days_late}, {self.fine_cap})",
                    self.late_fine.assessed,
                    inputs={"days_late": days_late, "filed_on": filed},
                    parameters={"per_day": self.fine_per_day, "cap": self.fine_cap},
                )
        self._cap_fines()

    def _apply(self, day: date) -> None:
        for component in (*self.order, *ADJUSTMENT_COMPONENTS):
            for bucket in self.buckets.get(component, []):
                while self.pool and bucket.outstanding > 0:
                    head = self.pool[0]
                    take = min(head.remaining, bucket.outstanding)
                    bucket.paid += take
                    head.remaining -= take
                    if head.remaining == 0:
                        self.pool.pop(0)
                    if component in _PRINCIPAL and component in self.penalty_bears:
                        self.frozen_penalty += take * self.rate_now
                    self.applications.append(
                        Application(
                            payment_id=head.payment_id,
                            component=component,
                            amount=take,
                            section=bucket.section,
                        )
                    )
                    self.trace.add(
                        f"{_RULE}.apply",
                        bucket.section,
                        f"{day.isoformat()}: {take} of payment {head.payment_id} to {bucket.key}",
                        take,
                        inputs={"payment_id": head.payment_id, "on": day, "component": component},
                    )
        if (
            self.cleared_on is None
            and not self.writeoffs_active
            and self.tax.exact + self.fee.exact > 0
            and self.tax.outstanding + self.fee.outstanding == 0
        ):
            self.cleared_on = day

    # ----------------------------------------------------------------- run

    def run(self) -> Balance:
        h = self.history
        active = sorted(
            (
                pay
                for pay in h.payments
                if pay.received_on <= self.as_of and (pay.reversed_on is None or pay.reversed_on > self.as_of)
            ),
            key=lambda pay: (pay.received_on, pay.payment_id),
        )
        counted = {p.payment_id for p in active}  # payment ids are unique (_validate)
        self.trace.add(
            f"{_RULE}.inputs",
            "",
            f"{self.jurisdiction} period {self.period} due {self.due.isoformat()}, "
            f"statement as of {self.as_of.isoformat()}",
            None,
            inputs={
                "tax": h.tax,
                "impact_fee": h.impact_fee,
                "declaration_filed_on": h.declaration_filed_on,
                "books_kept": h.books_kept,
                "bond_cover": h.bond_cover,
                "deficiency_assessed_on": h.deficiency_assessed_on,
                "payments_counted": [p.payment_id for p in active],
                "payments_ignored": [p.payment_id for p in h.payments if p.payment_id not in counted],
                "adjustments_counted": [a.fact_id for a in h.adjustments if a.effective_on <= self.as_of],
                "adjustments_ignored": [a.fact_id for a in h.adjustments if a.effective_on > self.as_of],
            },
            parameters=self.p.used,
        )
        arriving: dict[date, list[PaymentIn]] = defaultdict(list)
        for pay in active:
            arriving[pay.received_on].append(pay)
        for day in self._events(active):
            if self.whole_months:
                self._month_ends_before(day, arriving)
            self._walk_day(day, arriving)
        return self._statement(active)

    def _walk_day(self, day: date, arriving: dict[date, list[PaymentIn]]) -> None:
        self._accrue_to(day)
        self._assess_at(day)
        if (
            self.interest_method == "monthly_compound"
            and day > self.due
            and self._month_bounds(day)[1] == day
        ):
            self.capitalized = self.interest.exact
        if self._adjust_at(day):  # a write-off reversed: the principal is owed again today
            self._assess_at(day)
        for pay in arriving.get(day, ()):
            self.pool.append(_Money(pay.payment_id, round_cents(pay.amount)))
        self._apply(day)
        self.processed = max(self.processed, day)

    def _statement(self, active: list[PaymentIn]) -> Balance:
        components: list[ComponentBalance] = []
        for component in self._stated_components():
            buckets = self.buckets[component]
            assessed = sum((b.assessed for b in buckets), ZERO)
            paid = sum((b.paid for b in buckets), ZERO)
            adjusted = sum((b.adjusted for b in buckets), ZERO)
            components.append(
                ComponentBalance(
                    component=component,
                    assessed=assessed,
                    paid=paid,
                    outstanding=assessed - adjusted - paid,
                    adjusted=adjusted,
                )
            )
            self.trace.add(
                f"{_RULE}.component",
                "; ".join(b.section for b in buckets if b.assessed or b.paid),
                f"{component}: assessed {assessed}, paid {paid}"
                + (f", abated or written off {adjusted}" if adjusted else ""),
                assessed - adjusted - paid,
                inputs={
                    b.key: {"assessed": b.assessed, "paid": b.paid}
                    | ({"adjusted": b.adjusted} if b.adjusted else {})
                    for b in buckets
                },
            )
        total_assessed = sum((c.assessed for c in components), ZERO)
        total_paid = sum((c.paid for c in components), ZERO)
        total_adjusted = sum((c.adjusted for c in components), ZERO)
        credit = sum((m.remaining for m in self.pool), ZERO)
        balance = total_assessed - total_adjusted - total_paid
        principal_left = self.tax.outstanding + self.fee.outstanding
        if self.writeoffs_active:
            days_late = max(0, (self.writeoffs_active[0].fact.effective_on - self.due).days)
        elif principal_left > 0:
            days_late = max(0, (self.as_of - self.due).days)
        elif self.cleared_on is not None:
            days_late = max(0, (self.cleared_on - self.due).days)
        else:
            days_late = 0
        received = sum((round_cents(p.amount) for p in active), ZERO)
        if total_paid + credit != received:  # pragma: no cover - an invariant, not an input error
            raise AssertionError("payments not fully accounted for")
        self.trace.add(
            f"{_RULE}.total",
            "",
            f"as of {self.as_of.isoformat()}: assessed {total_assessed}, paid {total_paid}, "
            + (f"abated or written off {total_adjusted}, " if total_adjusted else "")
            + f"balance {balance}, credit {credit}",
            balance,
            inputs={"received": received, "days_late": days_late},
        )
        return Balance(
            jurisdiction=self.jurisdiction,
            period=str(self.period),
            due_date=self.due,
            as_of=self.as_of,
            components=components,
            total_assessed=total_assessed,
            total_paid=total_paid,
            balance=balance,
            credit=credit,
            days_late=days_late,
            applications=self.applications,
            trace=self.trace.to_list(),
            total_adjusted=total_adjusted,
            written_off=self._written_off_now(),
            adjustments=self.adjustments_applied,
        )


def compute_balance(
    history: AccountHistory,
    *,
    as_of: date,
    parameters: ParameterTree | None = None,
    explain: bool = True,
) -> Balance:
    """The account's balance as of ``as_of`` (rule 5; PR §28, §33, §46, §47; VI §54(f), (i), (l)).

    Walks the timeline from the due date to ``as_of``: interest accrues on the
    balance of each day, the late-payment penalty follows the tier reached on
    the unpaid principal, fines follow their own counts, and each payment
    received on or before ``as_of`` is applied in ``payments.application_order``
    on the day it was received. See the module docstring for the conventions.
    ``explain=False`` skips the trace (same amounts, empty ``trace``) for bulk work.
    """
    tree = parameters or default_tree()
    return _Ledger(history, as_of, tree, explain=explain).run()
