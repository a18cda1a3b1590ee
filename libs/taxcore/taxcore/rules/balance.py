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
approved, append-only :class:`AdjustmentIn` rows; see :mod:`taxcore.rules.balance_adjustments`.
A statement as of a date before a fact's ``effective_on`` is unchanged by it.

The steps live in modules named after them: :mod:`~taxcore.rules.balance_accrual` (penalty,
interest, fines), :mod:`~taxcore.rules.balance_payments` (application of payments),
:mod:`~taxcore.rules.balance_adjustments` (case facts); the account's parts and the public
models in :mod:`~taxcore.rules.balance_parts`. This module holds the timeline that calls them
and :func:`compute_balance`, the one to call.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree, default_tree
from taxcore.periods import Period
from taxcore.periods import due_date as period_due_date
from taxcore.rules.balance_accrual import _AccrualMixin, _Tier
from taxcore.rules.balance_adjustments import _AdjustmentsMixin
from taxcore.rules.balance_parts import (
    _RULE,
    ADJUSTMENT_COMPONENTS,
    COMPONENTS,
    AccountHistory,
    AdjustmentApplied,
    AdjustmentIn,
    AdjustmentKind,
    Application,
    Balance,
    ComponentBalance,
    PaymentIn,
    _add_duration,
    _Bucket,
    _cents,
    _Params,
    add_months,
)
from taxcore.rules.balance_payments import _Money, _PaymentsMixin
from taxcore.trace import NullTrace, Trace

__all__ = [
    "COMPONENTS",
    "ADJUSTMENT_COMPONENTS",
    "AccountHistory",
    "AdjustmentApplied",
    "AdjustmentIn",
    "AdjustmentKind",
    "Application",
    "Balance",
    "ComponentBalance",
    "PaymentIn",
    "add_months",
    "compute_balance",
]


class _Ledger(_PaymentsMixin, _AccrualMixin, _AdjustmentsMixin):
    """One account's timeline from the due date to ``as_of`` (see the module docstring):
    set up from the parameters in force on the due date, then walked day by day through
    the steps of ``balance_accrual``, ``balance_adjustments`` and ``balance_payments``."""

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
        """The parameters in force on the due date, step by step, and the account's buckets."""
        principal_sections = self._application_rules()
        penalty_section = self._late_payment_rules()
        self._interest_rules()
        p = self.p
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
        self._fine_rules()
        self._decide_principal()

    def _application_rules(self) -> dict[str, Any]:
        """The order payments are applied in and the principal's sections (VI §54(b)(1), (b)(3);
        PR §24, §28), an impact fee refused where none is levied."""
        p = self.p
        self.order = p.components("payments.application_order")
        if sorted(self.order) != sorted(COMPONENTS):
            raise ParameterError("payments.application_order", f"must list each of {COMPONENTS} once")
        principal_sections = p.get("payments.principal_sections").value
        if not isinstance(principal_sections, dict):
            raise ParameterError("payments.principal_sections", "must map component -> section")
        if self.history.impact_fee > 0 and "impact_fee" not in principal_sections:
            raise InvalidInput("impact_fee", f"{self.jurisdiction} levies no impact fee")
        return principal_sections

    def _late_payment_rules(self) -> str:
        """The late-payment tiers from the due date, how they combine and what bears them (VI
        §54(i)(1)-(5); PR §46, provisional); returns the penalty's section."""
        p = self.p
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
        return p.section("penalties.late_payment_tiers") if self.tiers else "no late-payment penalty"

    def _interest_rules(self) -> None:
        """How interest accrues, at what rate, on what (VI §54(i)(6); PR §46, provisional), and
        the PR §33 deficiency interest that replaces it from a notice."""
        p = self.p
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

    def _fine_rules(self) -> None:
        """The fines and their buckets: PR §47 per day the declaration is late, up to a cap; VI
        §54(l) per period without separate books."""
        p = self.p
        self.late_fine: _Bucket | None = None
        if p.has("penalties.late_declaration_fine_per_day"):
            self.fine_per_day = p.decimal("penalties.late_declaration_fine_per_day")
            self.fine_cap = p.decimal("penalties.late_declaration_fine_cap")
            self.late_fine = self._bucket(
                "fine", "late_declaration_fine", p.section("penalties.late_declaration_fine_per_day")
            )
        self.books_fine: _Bucket | None = None
        self.books_fine_amount = ZERO
        self.books_fine_assessed = False
        if p.has("penalties.no_books_fine_per_period"):
            self.books_fine_amount = p.decimal("penalties.no_books_fine_per_period")
            self.books_fine = self._bucket(
                "fine", "no_books_fine", p.section("penalties.no_books_fine_per_period")
            )
        elif not self.history.books_kept:
            self._note("books_kept=false has no effect here (no per-period books fine)")

    def _bucket(self, component: str, key: str, section: str) -> _Bucket:
        bucket = _Bucket(component, key, section)
        self.buckets[component].append(bucket)
        return bucket

    def _note(self, text: str) -> None:
        self.trace.add(f"{_RULE}.note", "", text, None)

    # ----------------------------------------------------------------- timeline

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
        """Everything assessed by ``day``: the penalty (tier reached), the fines, a decision's cap."""
        self._late_payment_penalty(day)
        self._no_books_fine(day)
        self._late_declaration_fine(day, self._paused_days)
        self._cap_fines()

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
        """One day of the timeline: interest through the day, what is assessed by then, the
        interest capitalized at a month end, the facts of the day, then the day's money."""
        self._accrue_interest(day)
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
        self._apply_payments(day)
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
