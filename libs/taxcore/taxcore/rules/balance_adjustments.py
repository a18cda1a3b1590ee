"""Rule 5, adjustment facts: decisions, abatements, write-offs and returned-payment fees.

Case work changes what an account owes only through approved, append-only facts
(:class:`~taxcore.rules.balance_parts.AdjustmentIn`), each under the section its
``section`` cites and counted from its ``effective_on``:

* a decision (``reduce``, ``cancel``) restates the assessment from the due date
  (:meth:`_AdjustmentsMixin._decide_principal`, :meth:`_AdjustmentsMixin._cap_fines`);
* an abatement forgives part of a penalty, interest or fine on its day
  (:meth:`_AdjustmentsMixin._abate`);
* a write-off stops accrual and collection until it is reversed
  (:meth:`_AdjustmentsMixin._write_off`, :meth:`_AdjustmentsMixin._reinstate`; the fine's
  days in between: :meth:`_AdjustmentsMixin._paused_days`);
* a returned-payment fee is a charge of its own (:meth:`_AdjustmentsMixin._charge_fee`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from taxcore.errors import InvalidInput
from taxcore.money import ZERO
from taxcore.rules.balance_parts import (
    _ABATABLE,
    _PRINCIPAL,
    _REDUCIBLE,
    _RULE,
    ADJUSTMENT_COMPONENTS,
    COMPONENTS,
    AccountHistory,
    AdjustmentApplied,
    AdjustmentIn,
    _Bucket,
    _cents,
)
from taxcore.trace import NullTrace, Trace

# Case work (decisions, abatements, write-offs, returned-payment fees) enters the
# ledger through these hooks only; the walk (balance._Ledger) calls them at fixed points:
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
    books_fine_amount: Decimal
    books_fine_assessed: bool
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
        """A decision on the fines caps what they total (the late-declaration fine first). The
        cap applies to the statute's amounts each time: the PR §47 fine is recomputed by day,
        the VI §54(l) fine is its per-period amount once assessed, so the decision's effect is
        what it takes off them."""
        if self.fine_cap_decided is None:
            return
        if self.books_fine is not None and self.books_fine_assessed:
            self.books_fine.exact = self.books_fine_amount
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
