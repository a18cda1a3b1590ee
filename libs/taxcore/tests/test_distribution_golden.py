"""Golden distribution cases: ``libs/taxcore/golden/*distribution*.yaml``."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from taxcore_golden import golden_cases

from taxcore.errors import TaxcoreError
from taxcore.rules.distribution import (
    DistributionResult,
    PRCertification,
    PRState,
    VIState,
    distribute_pr_month,
    distribute_vi_month,
)

CASES = [pytest.param(case, id=name) for name, case in golden_cases("*distribution*.yaml", "distribution")]


def _money(raw: Any) -> Decimal:
    return Decimal(str(raw))


def _certification(raw: dict[str, Any] | None) -> PRCertification | None:
    if raw is None:
        return None
    return PRCertification.model_validate({**raw, "amount": _money(raw["amount"])})


def _run(case: dict[str, Any]) -> list[DistributionResult]:
    jurisdiction = case["jurisdiction"]
    inp = case["input"]
    results: list[DistributionResult] = []
    state: PRState | VIState | None = None
    if "state" in inp:
        state = (PRState if jurisdiction == "PR" else VIState).model_validate(inp["state"])
    for month in inp["months"]:
        if jurisdiction == "PR":
            assert state is None or isinstance(state, PRState)
            raw_cert = month["certification"] if "certification" in month else inp.get("certification")
            result = distribute_pr_month(
                month=str(month["month"]),
                collected=_money(month["collected"]),
                certification=_certification(raw_cert),
                state=state,
            )
        else:
            assert state is None or isinstance(state, VIState)
            result = distribute_vi_month(
                month=str(month["month"]),
                room_tax=_money(month["room_tax"]),
                impact_fee=_money(month["impact_fee"]),
                state=state,
            )
        results.append(result)
        state = result.state
    return results


@pytest.mark.parametrize("case", CASES)
def test_golden_distribution(case: dict[str, Any]) -> None:
    assert isinstance(case["date"], date)
    assert case["section"]
    expected = case["output"]
    if "error" in expected:
        with pytest.raises(TaxcoreError) as info:
            _run(case)
        assert info.value.field == expected["error"]
        return
    results = _run(case)
    assert len(results) == len(expected["months"])
    for result, want in zip(results, expected["months"], strict=True):
        by_fund: dict[str, Decimal] = {}
        for a in result.allocations:
            by_fund[a.fund] = by_fund.get(a.fund, Decimal("0.00")) + a.amount
        got: dict[str, Any] = {
            "month": result.month,
            "pending": str(result.pending),
            "allocations": {f: str(by_fund.get(f, Decimal("0.00"))) for f in want["allocations"]},
        }
        for key in ("released", "collected"):
            if key in want:
                got[key] = str(getattr(result, key))
        assert got == want
        # Conservation, to the cent, for every month run.
        assert sum(by_fund.values(), Decimal(0)) + result.pending == result.collected
        assert result.collected == result.collected_in_month + result.released
