"""Golden balance cases: ``libs/taxcore/golden/*balance*.yaml``, computed by hand in comments."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from taxcore_golden import golden_cases

from taxcore.errors import TaxcoreError
from taxcore.rules.balance import AccountHistory, AdjustmentIn, PaymentIn, compute_balance

CASES = [pytest.param(case, id=name) for name, case in golden_cases("*balance*.yaml", "balance")]


def _history(jurisdiction: str, raw: dict[str, Any]) -> AccountHistory:
    payments = [
        PaymentIn(
            payment_id=str(p["id"]),
            received_on=p["received_on"],
            amount=Decimal(str(p["amount"])),
            reversed_on=p.get("reversed_on"),
        )
        for p in raw.get("payments", [])
    ]
    adjustments = [
        AdjustmentIn(
            fact_id=str(a["id"]),
            kind=a["kind"],
            effective_on=a["effective_on"],
            component=a.get("component"),
            amount=Decimal(str(a["amount"])) if "amount" in a else None,
            reversed_on=a.get("reversed_on"),
            section=str(a["section"]),
            reason=str(a.get("reason", "golden case")),
            approved_by=str(a.get("approved_by", "agency-user-2")),
            proposed_by=a.get("proposed_by", "agency-user-1"),
        )
        for a in raw.get("adjustments", [])
    ]
    return AccountHistory(
        jurisdiction=jurisdiction,
        period=str(raw["period"]),
        due_date=raw.get("due_date"),
        tax=Decimal(str(raw["tax"])),
        impact_fee=Decimal(str(raw.get("impact_fee", "0"))),
        declaration_filed_on=raw.get("declaration_filed_on"),
        books_kept=raw.get("books_kept", True),
        bond_cover=Decimal(str(raw.get("bond_cover", "0"))),
        deficiency_assessed_on=raw.get("deficiency_assessed_on"),
        payments=payments,
        adjustments=adjustments,
    )


def test_enough_golden_cases_per_jurisdiction() -> None:
    by_jurisdiction: dict[str, int] = {}
    for param in CASES:
        case = param.values[0]
        by_jurisdiction[case["jurisdiction"]] = by_jurisdiction.get(case["jurisdiction"], 0) + 1
    assert by_jurisdiction.get("PR", 0) >= 20
    assert by_jurisdiction.get("VI", 0) >= 20


@pytest.mark.parametrize("case", CASES)
def test_golden_balance(case: dict[str, Any]) -> None:
    assert isinstance(case["date"], date)
    assert case["section"]
    expected = case["output"]
    if "error" in expected:
        with pytest.raises(TaxcoreError) as info:
            compute_balance(_history(case["jurisdiction"], case["input"]), as_of=case["date"])
        assert info.value.field == expected["error"]
        return
    result = compute_balance(_history(case["jurisdiction"], case["input"]), as_of=case["date"])
    got: dict[str, Any] = {}
    for key in ("balance", "credit", "total_assessed", "total_paid", "total_adjusted", "written_off"):
        if key in expected:
            got[key] = str(getattr(result, key))
    if "days_late" in expected:
        got["days_late"] = result.days_late
    by_component = {c.component: c for c in result.components}
    for what in ("assessed", "paid", "outstanding", "adjusted"):
        if what in expected:
            got[what] = {k: str(getattr(by_component[k], what)) for k in expected[what]}
    assert got == expected
    # Every statement is balanced: what was applied plus the credit is what was received.
    applied = sum((a.amount for a in result.applications), Decimal(0))
    assert applied == result.total_paid
    assert result.balance == result.total_assessed - result.total_adjusted - result.total_paid
