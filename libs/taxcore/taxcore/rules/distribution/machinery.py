"""What every jurisdiction's distribution rule is built from: the fund list of the
parameters, amounts checked to the cent, fiscal-year month indexes, cumulative
installments, the conserving result, and the shape of a rule (:class:`JurisdictionDistribution`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree, default_tree
from taxcore.periods import Period, fiscal_year, fiscal_year_months
from taxcore.rules.distribution.models import (
    DebtServiceStatus,
    DistributionResult,
    Floor,
    Fund,
    FundAllocation,
    PRCertification,
    PRState,
    VIState,
)
from taxcore.trace import Trace

_RULE = "rule6.distribution"


def _tree(parameters: ParameterTree | None) -> ParameterTree:
    return parameters or default_tree()


def _amount(value: Decimal, field: str) -> Decimal:
    if not value.is_finite() or value != round_cents(value):
        raise InvalidInput(field, f"must be an amount in whole cents, got {value}")
    if value < 0:
        raise InvalidInput(field, "must not be negative")
    cents: Decimal = round_cents(value)
    return cents


def _decimal(tree: ParameterTree, jurisdiction: str, path: str, on: date) -> Decimal:
    v = tree.value(jurisdiction, path, on)
    if isinstance(v, bool) or not isinstance(v, Decimal):
        raise ParameterError(path, f"{jurisdiction} {path} must be a number, got {v!r}")
    return v


def _month_index(jurisdiction: str, month: Period, tree: ParameterTree) -> tuple[int, int]:
    fy = fiscal_year(jurisdiction, month.first_day, parameters=tree)
    months = fiscal_year_months(jurisdiction, fy, parameters=tree)
    return fy, months.index(month) + 1


def _check_order(month: Period, last_month: str | None) -> None:
    if last_month is not None and month <= Period.parse(last_month):
        raise InvalidInput("month", f"{month} is not after the state's last month {last_month}")


def _cumulative(amount: Decimal, elapsed: int, installments: int) -> Decimal:
    """What is due by the ``elapsed``-th installment of ``installments`` equal ones."""
    if elapsed <= 0:
        nothing: Decimal = ZERO
        return nothing
    if elapsed >= installments:
        return amount
    due: Decimal = round_cents(amount * elapsed / installments)
    return due


def funds(jurisdiction: str, on: date, parameters: ParameterTree | None = None) -> list[Fund]:
    """The funds of ``jurisdiction`` in force on ``on``, in order of priority."""
    pv = _tree(parameters).get(jurisdiction, "distribution.funds", on)
    if not isinstance(pv.value, list):
        raise ParameterError("distribution.funds", f"{jurisdiction}: must be a list")
    result: list[Fund] = []
    for item in pv.value:
        if not isinstance(item, dict):
            raise ParameterError("distribution.funds", f"{jurisdiction}: bad fund {item!r}")
        result.append(Fund(code=str(item["code"]), name=str(item["name"]), section=str(item["section"])))
    return result


def _section_of(fund_list: list[Fund], code: str) -> str:
    for f in fund_list:
        if f.code == code:
            return f.section
    raise ParameterError("distribution.funds", f"fund {code!r} is not defined")


def _result(
    jurisdiction: str,
    period: Period,
    collected_in_month: Decimal,
    released: Decimal,
    allocations: list[FundAllocation],
    pending: Decimal,
    state: PRState | VIState,
    trace: Trace,
) -> DistributionResult:
    total = sum((a.amount for a in allocations), ZERO)
    collected = collected_in_month + released
    if total + pending != collected:  # pragma: no cover - an invariant, not an input error
        raise AssertionError(f"distribution does not conserve money: {total} + {pending}")
    trace.add(
        f"{_RULE}.conservation",
        "",
        f"allocated {total} + pending {pending} = collected {collected_in_month} + released {released}",
        collected,
    )
    return DistributionResult(
        jurisdiction=jurisdiction,
        month=str(period),
        collected=collected,
        collected_in_month=collected_in_month,
        released=released,
        allocations=allocations,
        pending=pending,
        state=state,
        trace=trace.to_list(),
    )


@dataclass(frozen=True, slots=True)
class JurisdictionDistribution:
    """One jurisdiction's distribution rule, as the generic entry points use it.

    ``distribute(month, amounts, certification, state, tree)`` gets the amounts by
    component (only ``components``), the certification (or None) and the state already
    validated as ``state_model`` (or None); ``floors(on, tree)`` lists the floors reported
    against; ``debt_service(state)`` the certified debt service, or None if there is none.
    """

    components: frozenset[str]
    state_model: type[PRState] | type[VIState]
    distribute: Callable[
        [str, Mapping[str, Decimal], PRCertification | None, Any, ParameterTree], DistributionResult
    ]
    floors: Callable[[date, ParameterTree], list[Floor]]
    debt_service: Callable[[Any], DebtServiceStatus | None]
    #: ``opening(transferred, fiscal_year, through_month, tree, trace)`` -> the state after
    #: ``through_month`` (amounts validated: fund codes of the jurisdiction, whole cents);
    #: None: the jurisdiction takes no opening state (its first run starts empty).
    opening: Callable[[Mapping[str, Decimal], int, str, ParameterTree, Trace], Any] | None = None
