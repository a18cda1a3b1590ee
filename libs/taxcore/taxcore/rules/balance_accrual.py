"""Rule 5, accrual: what the law adds from the day after the due date on what is unpaid.

* the late-payment penalty graded by delay (VI §54(i)(1)-(5); PR §46, provisional):
  :func:`late_payment_rate`, :meth:`_AccrualMixin._late_payment_penalty`;
* interest (VI §54(i)(6); PR §46, provisional; PR §33 after a deficiency notice):
  :func:`interest_for_days`, :meth:`_AccrualMixin._accrue_interest`, and whole VI interest
  months in one step, :meth:`_AccrualMixin._accrue_whole_months`;
* fines (PR §47, :func:`late_declaration_fine`, :meth:`_AccrualMixin._late_declaration_fine`;
  VI §54(l), :meth:`_AccrualMixin._no_books_fine`).

The ledger (:mod:`taxcore.rules.balance`) calls these on each day of the account's timeline;
each step adds a trace step citing its section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, getcontext
from typing import Any

from taxcore.money import ZERO, round_cents
from taxcore.rules.balance_parts import (
    _PRINCIPAL,
    _RULE,
    AccountHistory,
    _Bucket,
    _year_days,
    add_months,
)
from taxcore.rules.balance_payments import _Money
from taxcore.trace import NullTrace, Trace

__all__ = ["interest_for_days", "late_declaration_fine", "late_payment_rate"]


@dataclass(frozen=True)
class _Tier:
    starts: date  # first day the tier applies
    rate: Decimal
    after: str
    section: str


def late_payment_rate(tiers: list[_Tier], mode: str, day: date) -> tuple[Decimal, list[_Tier]]:
    """The late-payment rate on ``day`` and the tiers it comes from (VI §54(i)(1)-(5); PR §46):
    the highest tier reached (``replace``) or every tier reached added up (``cumulative``),
    as ``penalties.tier_mode`` reads the statute."""
    reached = [t for t in tiers if day >= t.starts]
    if not reached:
        return ZERO, []
    if mode == "cumulative":
        return sum((t.rate for t in reached), ZERO), reached
    return reached[-1].rate, reached[-1:]


def interest_for_days(base: Decimal, rate: Decimal, days: int, length: int) -> Decimal:
    """Interest on ``base`` for ``days`` of a unit of ``length`` days at ``rate`` per unit (VI
    §54(i)(6): a month; PR §46, §33: a year), in full precision (stated when applied)."""
    return base * rate * days / length


def late_declaration_fine(per_day: Decimal, cap: Decimal, days_late: int) -> Decimal:
    """PR §47: ``per_day`` for each day late, at most ``cap``."""
    return min(per_day * days_late, cap)


class _AccrualMixin:
    history: AccountHistory
    due: date
    trace: Trace | NullTrace
    buckets: dict[str, list[_Bucket]]
    tax: _Bucket
    fee: _Bucket
    penalty: _Bucket
    interest: _Bucket
    deficiency_interest: _Bucket | None
    late_fine: _Bucket | None
    books_fine: _Bucket | None
    tiers: list[_Tier]
    mode: str
    penalty_bears: list[str]
    frozen_penalty: Decimal
    rate_now: Decimal
    interest_method: str
    interest_rate: Decimal
    interest_bears: list[str]
    deficiency_rate: Decimal
    deficiency_bears: list[str]
    notice: date | None
    fine_per_day: Decimal
    fine_cap: Decimal
    books_fine_amount: Decimal
    books_fine_assessed: bool
    capitalized: Decimal
    last: date
    processed: date
    pool: list[_Money]

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

    def _late_payment_penalty(self, day: date) -> None:
        """VI §54(i)(1)-(5), PR §46 (provisional): the unpaid principal bears the rate of the tier
        reached; principal paid earlier keeps the rate of the day it was paid (tranche rule)."""
        rate, reached = late_payment_rate(self.tiers, self.mode, day)
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

    def _no_books_fine(self, day: date) -> None:
        """VI §54(l): a fine per tax period without separate books or records, assessed the
        first day after the due date (so it never takes a timely payment of the tax)."""
        if (
            self.books_fine is not None
            and not self.history.books_kept
            and day > self.due
            and not self.books_fine_assessed
        ):
            self.books_fine_assessed = True
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

    def _late_declaration_fine(self, day: date, paused_days: Callable[[date], int]) -> None:
        """PR §47: a fine per day the declaration is late (each day a separate infraction), up
        to the cap; the days stop at filing and while a write-off is in force (``paused_days``)."""
        if self.late_fine is not None:
            filed = self.history.declaration_filed_on
            end = filed if filed is not None and filed <= day else day
            days_late = max(0, (end - self.due).days - paused_days(end))
            before = self.late_fine.assessed
            self.late_fine.exact = late_declaration_fine(self.fine_per_day, self.fine_cap, days_late)
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

    def _accrue_interest(self, day: date) -> None:
        """Interest from the day after the last accrual through ``day`` on the balance of the day
        before: VI §54(i)(6) (1% a month, compounding: capitalized at each interest-month end),
        PR §46 (provisional: 10% a year simple) and, from the day after a deficiency notice, PR
        §33 (10% a year on the deficiency the bond does not cover) instead."""
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
        amount = interest_for_days(base, rate, days, length)
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
        if self.books_fine is not None and not self.history.books_kept and not self.books_fine_assessed:
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
                amount = interest_for_days(base, rate, length, length)
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
