"""Estimated assessment of a period with no (or no trustworthy) declaration.

PR §32 (past the end of our text; design summary): for a non-filer the Company
estimates the tax "from the greatest of average rate, room cost, industry cost".
VI §54(d) applies the arbitrary assessment of 33 V.I.C. § 45 (not in our files).

Method (both jurisdictions, provisional parameters ``estimate.*``): the taxable
base is the greater of

* the **history floor** — the highest taxable base among the last
  ``estimate.history_periods`` filed periods (``history`` is in chronological
  order, most recent last); and
* the **capacity estimate** — rooms x days in the period x the greatest of the
  average daily rate, the room cost and the industry cost x ``estimate.occupancy``,
  rounded half-up to the cent.

The tax is that base times the class rate (the same rate rules as a declaration).
The VI impact fee is estimated at the highest impact fee among the same history
periods (owner unit-days cannot be inferred from room values).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from taxcore.errors import InvalidInput
from taxcore.money import CURRENCY, ZERO, fmt, round_cents
from taxcore.parameters import ParameterTree, default_tree
from taxcore.periods import Period
from taxcore.rules._common import Ref, as_decimal, check_count, param
from taxcore.rules.declaration import _Context, _context, resolve_period, select_rate
from taxcore.trace import Trace

__all__ = ["EstimateResult", "HasTaxableBase", "estimate_assessment"]


class HasTaxableBase(Protocol):
    @property
    def taxable_base(self) -> Decimal: ...


class EstimateResult(BaseModel):
    """An estimated assessment and the trace of how it was reached."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    taxable_base: Decimal
    rate: Decimal
    tax: Decimal
    impact_fee: Decimal
    total_due: Decimal
    method: str  # "history" or "capacity": which floor set the base
    currency: str = CURRENCY
    trace: Trace

    def explain(self) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = self.trace.to_list()
        return steps

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """JSON-ready amounts (strings with two decimals), optionally with the trace."""
        out: dict[str, Any] = {
            name: fmt(getattr(self, name)) for name in ("taxable_base", "tax", "impact_fee", "total_due")
        }
        out |= {"rate": str(self.rate), "method": self.method, "currency": self.currency}
        if explain:
            out["trace"] = self.explain()
        return out


def _base_of(item: Decimal | HasTaxableBase, field: str) -> tuple[Decimal, Decimal]:
    """(taxable base, impact fee) of one history entry."""
    if isinstance(item, Decimal | int) and not isinstance(item, bool):
        base, fee = Decimal(item), ZERO
    elif isinstance(item, dict):
        base = Decimal(item["taxable_base"])
        fee = Decimal(item.get("impact_fee") or 0)
    else:
        base = getattr(item, "taxable_base", None)  # type: ignore[assignment]
        if not isinstance(base, Decimal):
            raise InvalidInput(field, "a history entry is a Decimal base or has taxable_base")
        raw_fee = getattr(item, "impact_fee", None)
        fee = raw_fee if isinstance(raw_fee, Decimal) else ZERO
    if not base.is_finite() or base < 0 or not fee.is_finite() or fee < 0:
        raise InvalidInput(field, "history amounts must be non-negative")
    return base, fee


def estimate_assessment(
    *,
    jurisdiction: str,
    lodging_class: str,
    casino: bool,
    period: str,
    history: Sequence[Decimal | HasTaxableBase],
    room_count: int,
    average_daily_rate: Decimal | None = None,
    room_cost: Decimal | None = None,
    industry_cost: Decimal | None = None,
    parameters: ParameterTree | None = None,
    today: date | None = None,
) -> EstimateResult:
    """Estimate the tax of a period (PR §32; VI §54(d), 33 V.I.C. § 45). See module doc.

    The steps: :func:`history_floor`, :func:`capacity_estimate`, :func:`estimated_base`
    (the greater), :func:`estimated_tax` at the class rate, :func:`estimated_impact_fee`,
    and the total due.
    """
    tree = parameters or default_tree()
    if jurisdiction not in tree.jurisdictions():
        raise InvalidInput(
            "jurisdiction",
            f"unknown jurisdiction {jurisdiction!r}; known: {', '.join(tree.jurisdictions())}",
        )
    p = resolve_period(period, today)
    on = p.first_day
    ctx = _context(tree, jurisdiction, on)
    if lodging_class not in ctx.classes:
        raise InvalidInput("lodging_class", f"unknown lodging class {lodging_class!r} for {jurisdiction}")
    check_count(room_count, "room_count")
    values = _room_values(
        average_daily_rate=average_daily_rate, room_cost=room_cost, industry_cost=industry_cost
    )
    n_ref = param(tree, jurisdiction, "estimate.history_periods", on)
    occ_ref = param(tree, jurisdiction, "estimate.occupancy", on)
    n = int(as_decimal(n_ref))
    occupancy = as_decimal(occ_ref)
    section = n_ref.section

    recent = list(history)[-n:] if n > 0 else []
    offset = len(history) - len(recent)
    pairs = [_base_of(item, f"history[{offset + i}]") for i, item in enumerate(recent)]
    if not pairs and not values:
        raise InvalidInput(
            "history",
            "an estimate needs filed history or at least one of average_daily_rate, room_cost, industry_cost",
        )

    trace = Trace()
    floor = history_floor(pairs, n, n_ref, trace)
    capacity, greatest = capacity_estimate(values, room_count, p, occupancy, occ_ref, section, trace)
    base, method = estimated_base(pairs, values, floor, capacity, section, trace)
    rate = _estimated_rate(ctx, lodging_class, casino, values, greatest, trace)
    tax = estimated_tax(base, rate, section, trace)
    impact_fee = estimated_impact_fee(ctx, pairs, n, section, trace)
    total = tax + impact_fee
    trace.add(
        "total_due",
        section,
        "Estimated total: tax plus impact fee",
        total,
        inputs={"sum_of": ["tax", "impact_fee"]},
    )
    return EstimateResult.model_construct(
        taxable_base=base,
        rate=rate,
        tax=tax,
        impact_fee=impact_fee,
        total_due=total,
        method=method,
        currency=CURRENCY,
        trace=trace,
    )


def _room_values(**given: Decimal | None) -> dict[str, Decimal]:
    """The room values given (average daily rate, room cost, industry cost), checked."""
    values: dict[str, Decimal] = {}
    for name, v in given.items():
        if v is None:
            continue
        if isinstance(v, float) or not isinstance(v, Decimal | int) or not Decimal(v).is_finite():
            raise InvalidInput(name, "must be a Decimal amount")
        if v < 0:
            raise InvalidInput(name, f"must not be negative, got {v}")
        values[name] = Decimal(v)
    return values


def history_floor(pairs: list[tuple[Decimal, Decimal]], n: int, n_ref: Ref, trace: Trace) -> Decimal:
    """The history floor (PR §32; VI §54(d)): the highest taxable base among the last
    ``estimate.history_periods`` filed periods (0 without history)."""
    floor = max((b for b, _ in pairs), default=ZERO)
    trace.add(
        "estimate.history_floor",
        n_ref.section,
        f"Highest taxable base among the last {n} filed periods",
        floor,
        inputs={"bases": [b for b, _ in pairs]},
        parameters=n_ref.cite,
    )
    return floor


def capacity_estimate(
    values: dict[str, Decimal],
    room_count: int,
    p: Period,
    occupancy: Decimal,
    occ_ref: Ref,
    section: str,
    trace: Trace,
) -> tuple[Decimal, Decimal | None]:
    """The capacity estimate (PR §32: "from the greatest of average rate, room cost, industry
    cost"): rooms x days x that greatest value x ``estimate.occupancy``, rounded half-up to the
    cent; (0, None) when no room value is given. Returns it and the greatest value."""
    if not values:
        return ZERO, None
    greatest = max(values.values())
    capacity = round_cents(room_count * p.days * greatest * occupancy)
    trace.add(
        "estimate.capacity",
        section,
        "Rooms x days x the greatest of average daily rate, room cost and industry cost x occupancy",
        capacity,
        inputs={
            "room_count": room_count,
            "days": p.days,
            "greatest_value": greatest,
            "occupancy": occupancy,
            **values,
            "product_of": ["room_count", "days", "greatest_value", "occupancy"],
        },
        parameters=occ_ref.cite,
    )
    return capacity, greatest


def estimated_base(
    pairs: list[tuple[Decimal, Decimal]],
    values: dict[str, Decimal],
    floor: Decimal,
    capacity: Decimal,
    section: str,
    trace: Trace,
) -> tuple[Decimal, str]:
    """The estimated taxable base (PR §32; VI §54(d)): the greater of the history floor and
    the capacity estimate, with the method that gave it."""
    method = "history" if pairs and floor > capacity else "capacity"
    if not values:
        method = "history"
    base = max(floor, capacity)
    trace.add(
        "taxable_base",
        section,
        f"Estimated taxable base: the greater of the history floor and the capacity estimate ({method})",
        base,
        inputs={"method": method, "history_floor": floor, "capacity": capacity},
    )
    return base, method


def _estimated_rate(
    ctx: _Context,
    lodging_class: str,
    casino: bool,
    values: dict[str, Decimal],
    greatest: Decimal | None,
    trace: Trace,
) -> Decimal:
    """The class rate of a declaration (PR §24(B); VI §54(b)(1)), the daily rate threshold
    read on the average daily rate (else the greatest value) when one is given."""
    if greatest is not None:
        per_night = values.get("average_daily_rate", greatest)
        return select_rate(ctx, lodging_class, casino, per_night, 1, trace)
    return select_rate(ctx, lodging_class, casino, Decimal(1), 0, trace, lenient=True)


def estimated_tax(base: Decimal, rate: Decimal, section: str, trace: Trace) -> Decimal:
    """The estimated tax (PR §32; VI §54(d)): the estimated base times the class rate,
    rounded half-up to the cent."""
    tax = round_cents(base * rate)
    trace.add(
        "tax",
        section,
        "Estimated tax: taxable base x rate, rounded half-up to the cent",
        tax,
        inputs={"product_of": ["taxable_base", "rate"]},
    )
    return tax


def estimated_impact_fee(
    ctx: _Context, pairs: list[tuple[Decimal, Decimal]], n: int, section: str, trace: Trace
) -> Decimal:
    """The estimated impact fee (VI §54(b)(2)-(3); §54(d)): the highest impact fee among the
    same history periods (owner unit-days cannot be inferred from room values); 0 where the
    jurisdiction has no impact fee."""
    if ctx.impact_fee is None:
        return ZERO
    fee = max((f for _, f in pairs), default=ZERO)
    trace.add(
        "impact_fee",
        f"{ctx.impact_fee.section}; {section}",
        f"Estimated impact fee: the highest among the last {n} filed periods",
        fee,
        inputs={"fees": [f for _, f in pairs]},
    )
    return fee
