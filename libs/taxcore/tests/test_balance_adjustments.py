"""Adjustment facts in rule 5 beyond the golden cases: explain, validation, reproducibility."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from taxcore.errors import InvalidInput
from taxcore.rules.balance import AccountHistory, AdjustmentIn, PaymentIn, compute_balance

D = Decimal


def _fact(**kw: object) -> AdjustmentIn:
    base: dict[str, object] = {
        "fact_id": "f1",
        "section": "§54(i)",
        "reason": "reasonable cause: hurricane",
        "approved_by": "user-checker",
        "proposed_by": "user-maker",
    }
    base.update(kw)
    return AdjustmentIn.model_validate(base)


def _vi(*facts: AdjustmentIn, payments: list[PaymentIn] | None = None) -> AccountHistory:
    return AccountHistory(
        jurisdiction="VI",
        period="2026-10",
        tax=D("1000.00"),
        payments=payments or [],
        adjustments=list(facts),
    )


class TestExplain:
    def test_abatement_in_trace_with_who_and_why(self) -> None:
        fact = _fact(kind="abate", component="penalty", amount=D("50.00"), effective_on=date(2026, 12, 1))
        result = compute_balance(_vi(fact), as_of=date(2026, 12, 30))
        steps = [s for s in result.trace if s["rule"] == "rule5.balance.adjustment.abate"]
        assert len(steps) == 1
        assert steps[0]["citation"] == "§54(i)"
        assert steps[0]["inputs"]["approved_by"] == "user-checker"
        assert steps[0]["inputs"]["proposed_by"] == "user-maker"
        assert steps[0]["inputs"]["reason"] == "reasonable cause: hurricane"
        assert steps[0]["result"] == "-50.00"
        assert [(a.fact_id, a.kind, a.amount, a.approved_by) for a in result.adjustments] == [
            ("f1", "abate", D("-50.00"), "user-checker")
        ]

    def test_fact_after_the_statement_is_listed_as_ignored(self) -> None:
        fact = _fact(kind="write_off", effective_on=date(2027, 1, 5))
        result = compute_balance(_vi(fact), as_of=date(2026, 12, 30))
        assert result.trace[0]["inputs"]["adjustments_ignored"] == ["f1"]
        assert result.adjustments == []
        assert result.balance == D("1060.48")

    def test_decision_amount_is_the_change(self) -> None:
        fact = _fact(kind="reduce", component="tax", amount=D("600.00"), effective_on=date(2026, 12, 1))
        result = compute_balance(_vi(fact), as_of=date(2026, 12, 1))
        assert [(a.kind, a.amount) for a in result.adjustments] == [("reduce", D("-400.00"))]


class TestWriteOff:
    def test_payment_during_write_off_is_a_credit_then_pays_on_reversal(self) -> None:
        fact = _fact(kind="write_off", effective_on=date(2026, 12, 30), reversed_on=date(2027, 1, 10))
        pay = PaymentIn(payment_id="p1", received_on=date(2027, 1, 5), amount=D("300.00"))
        during = compute_balance(_vi(fact, payments=[pay]), as_of=date(2027, 1, 9))
        assert (during.balance, during.credit, during.written_off) == (D("0.00"), D("300.00"), D("1060.48"))
        after = compute_balance(_vi(fact, payments=[pay]), as_of=date(2027, 1, 10))
        assert after.credit == D("0.00")
        assert after.written_off == D("0.00")
        assert after.total_paid == D("300.00")
        # reinstated Jan 10, day 41: penalty 15% x 1000.00 = 150.00; interest 10.48 (month 1 only);
        # 300.00 pays interest 10.48, penalty 150.00, tax 139.52 -> owed 860.48
        assert after.balance == D("860.48")


class TestValidation:
    @pytest.mark.parametrize(
        ("fields", "field"),
        [
            ({"kind": "cancel", "amount": D("1.00")}, "adjustments[0].component"),
            ({"kind": "abate", "component": "tax", "amount": D("1.00")}, "adjustments[0].component"),
            ({"kind": "abate", "component": "penalty"}, "adjustments[0].amount"),
            ({"kind": "abate", "component": "penalty", "amount": D("1.005")}, "adjustments[0].amount"),
            ({"kind": "returned_payment_fee", "amount": D("0")}, "adjustments[0].amount"),
            (
                {"kind": "reduce", "component": "tax", "amount": D("1.00"), "reversed_on": date(2027, 1, 1)},
                "adjustments[0].reversed_on",
            ),
            ({"kind": "write_off", "reversed_on": date(2026, 1, 1)}, "adjustments[0].reversed_on"),
        ],
    )
    def test_bad_fact_names_its_field(self, fields: dict[str, object], field: str) -> None:
        fact = _fact(effective_on=date(2026, 12, 1), **fields)
        with pytest.raises(InvalidInput) as info:
            compute_balance(_vi(fact), as_of=date(2026, 12, 1))
        assert info.value.field == field

    def test_duplicate_fact_id(self) -> None:
        a = _fact(kind="write_off", effective_on=date(2026, 12, 1))
        with pytest.raises(InvalidInput) as info:
            compute_balance(_vi(a, a), as_of=date(2026, 12, 1))
        assert info.value.field == "adjustments[1].fact_id"


class TestAbatementThenDecision:
    def test_later_cancel_limits_an_earlier_abatement_instead_of_failing(self) -> None:
        abate = _fact(kind="abate", component="penalty", amount=D("50.00"), effective_on=date(2026, 12, 1))
        cancel = _fact(fact_id="f2", kind="cancel", effective_on=date(2026, 12, 20), section="§54(d)")
        result = compute_balance(_vi(abate, cancel), as_of=date(2026, 12, 20))
        assert result.balance == D("0.00")
        effects = [(a.fact_id, a.amount) for a in result.adjustments]
        assert effects == [("f2", D("-1000.00")), ("f1", D("0.00"))]
