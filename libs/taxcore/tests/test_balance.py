"""Rule 5 — balances as of any date (PR §28, §33, §46, §47; VI §54(f), (i), (l))."""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import ValidationError

from taxcore.errors import InvalidInput, ParameterError
from taxcore.parameters import PACKAGE_ROOT, ParameterTree, load_tree
from taxcore.rules.balance import (
    COMPONENTS,
    AccountHistory,
    Application,
    Balance,
    PaymentIn,
    add_months,
    compute_balance,
)

D = Decimal


def vi(tax: str = "1000.00", **kw: object) -> AccountHistory:
    return AccountHistory.model_validate({"jurisdiction": "VI", "period": "2026-10", "tax": D(tax), **kw})


def pr(tax: str = "1000.00", **kw: object) -> AccountHistory:
    return AccountHistory.model_validate({"jurisdiction": "PR", "period": "2026-10", "tax": D(tax), **kw})


def pay(pid: str, on: date, amount: str, reversed_on: date | None = None) -> PaymentIn:
    return PaymentIn(payment_id=pid, received_on=on, amount=D(amount), reversed_on=reversed_on)


def component(balance: Balance, name: str) -> tuple[str, str, str]:
    c = next(c for c in balance.components if c.component == name)
    return str(c.assessed), str(c.paid), str(c.outstanding)


def tree_with(tmp_path: Path, relative: str, text: str) -> ParameterTree:
    root = tmp_path / "parameters"
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (root / relative).write_text(text, encoding="utf-8")
    return load_tree(root)


class TestModels:
    def test_extra_fields_are_refused(self) -> None:
        with pytest.raises(ValidationError):
            AccountHistory.model_validate(
                {"jurisdiction": "VI", "period": "2026-10", "tax": "1", "surprise": 1}
            )
        with pytest.raises(ValidationError):
            PaymentIn.model_validate({"payment_id": "a", "received_on": "2026-01-01", "amount": "1", "x": 1})

    def test_statement_shape(self) -> None:
        b = compute_balance(vi(), as_of=date(2026, 12, 31))
        assert [c.component for c in b.components] == list(COMPONENTS)
        assert b.due_date == date(2026, 11, 30)
        assert b.jurisdiction == "VI"
        assert b.period == "2026-10"
        # The trace serializes to plain JSON types and names the statute.
        assert all(isinstance(step["rule"], str) for step in b.trace)
        assert any(step["citation"] == "§54(i)(6)" for step in b.trace)
        inputs = b.trace[0]
        assert inputs["parameters"]["penalties.tier_mode"]["provisional"] is True
        assert inputs["parameters"]["penalties.interest_rate"]["value"] == "0.01"

    def test_due_date_override(self) -> None:
        b = compute_balance(vi(due_date=date(2026, 12, 30)), as_of=date(2026, 12, 31))
        assert b.days_late == 1
        assert component(b, "penalty")[0] == "50.00"


class TestValidation:
    @pytest.mark.parametrize(
        ("history", "field"),
        [
            ({"tax": D("-1.00")}, "tax"),
            ({"tax": D("1.001")}, "tax"),
            ({"impact_fee": D("-5")}, "impact_fee"),
            ({"bond_cover": D("-5")}, "bond_cover"),
            ({"payments": [pay("a", date(2026, 12, 1), "0.00")]}, "payments[0].amount"),
            ({"payments": [pay("a", date(2026, 12, 1), "-10.00")]}, "payments[0].amount"),
            ({"payments": [pay("a", date(2026, 12, 1), "10.005")]}, "payments[0].amount"),
            (
                {"payments": [pay("a", date(2026, 12, 1), "1"), pay("a", date(2026, 12, 2), "1")]},
                "payments[1].payment_id",
            ),
            (
                {"payments": [pay("a", date(2026, 12, 5), "1", reversed_on=date(2026, 12, 1))]},
                "payments[0].reversed_on",
            ),
            ({"period": "2026-13"}, "period"),
        ],
    )
    def test_bad_input_names_the_field(self, history: dict[str, object], field: str) -> None:
        base: dict[str, object] = {"jurisdiction": "VI", "period": "2026-10", "tax": D("100")}
        base.update(history)
        with pytest.raises(InvalidInput) as info:
            compute_balance(AccountHistory.model_validate(base), as_of=date(2027, 1, 1))
        assert info.value.field == field

    def test_unknown_jurisdiction(self) -> None:
        with pytest.raises(InvalidInput) as info:
            compute_balance(
                AccountHistory(jurisdiction="ZZ", period="2026-10", tax=D("1")),
                as_of=date(2027, 1, 1),
            )
        assert info.value.field == "jurisdiction"

    def test_before_the_first_parameter_is_strict(self) -> None:
        with pytest.raises(ParameterError):
            compute_balance(
                AccountHistory(jurisdiction="VI", period="2010-01", tax=D("1")),
                as_of=date(2011, 1, 1),
            )


class TestLatePaymentPenaltyVI:
    """§54(i)(1)-(5): the tier reached on the unpaid principal."""

    @pytest.mark.parametrize(
        ("days", "penalty"),
        [
            (0, "0.00"),
            (1, "50.00"),
            (30, "50.00"),
            (31, "150.00"),
            (90, "150.00"),
            (91, "250.00"),
            (180, "250.00"),
            (181, "500.00"),
            (365, "500.00"),
            (366, "1000.00"),
            (1000, "1000.00"),
        ],
    )
    def test_tier_boundaries(self, days: int, penalty: str) -> None:
        b = compute_balance(vi(), as_of=date(2026, 11, 30) + timedelta(days=days))
        assert component(b, "penalty")[0] == penalty
        assert b.days_late == days

    def test_cumulative_mode(self, tmp_path: Path) -> None:
        tree = tree_with(
            tmp_path,
            "VI/penalties/tier_mode.yaml",
            "description: test\nmetadata:\n  reference: {section: '§54(i)', title: t}\n"
            "  open_ended: true\nvalues:\n  2017-10-01: {value: cumulative}\n",
        )
        day31 = compute_balance(vi(), as_of=date(2026, 12, 31), parameters=tree)
        assert component(day31, "penalty")[0] == "200.00"  # 5% + 15%
        day366 = compute_balance(vi(), as_of=date(2027, 12, 1), parameters=tree)
        assert component(day366, "penalty")[0] == "1950.00"  # 5+15+25+50+100 %

    def test_penalty_fixed_on_what_was_paid(self) -> None:
        # 600.00 on day 10 pays 600.00 of tax (tax first); those 600.00 keep the 5% tier
        # (30.00); the 400.00 still unpaid move to 15% on day 31 (60.00): 90.00, none paid.
        b = compute_balance(vi(payments=[pay("p", date(2026, 12, 10), "600.00")]), as_of=date(2026, 12, 31))
        assert component(b, "penalty") == ("90.00", "0.00", "90.00")

    def test_impact_fee_bears_penalty(self) -> None:
        b = compute_balance(vi("0.00", impact_fee=D("500.00")), as_of=date(2026, 12, 1))
        assert component(b, "penalty")[0] == "25.00"


class TestInterestVI:
    """§54(i)(6): 1% a month, compounding, on principal and penalties."""

    def test_one_full_month_without_penalty_growth(self) -> None:
        # Day 1 on 1000.00 and days 2-30 on 1050.00, over a 30-day interest month.
        b = compute_balance(vi(), as_of=date(2026, 12, 30))
        assert component(b, "interest")[0] == "10.48"

    def test_compounding_capitalizes_the_month(self) -> None:
        # Month 2 starts on 1000 + 50 + 10.48: the month-1 interest bears interest.
        b = compute_balance(vi(), as_of=date(2026, 12, 31))
        assert component(b, "interest")[0] == "10.83"
        step = [s for s in b.trace if s["rule"] == "rule5.balance.interest"][-1]
        assert step["inputs"]["capitalized_interest"] == "10.48"

    def test_month_end_clamps(self) -> None:
        assert add_months(date(2027, 1, 31), 1) == date(2027, 2, 28)
        assert add_months(date(2028, 1, 31), 1) == date(2028, 2, 29)
        assert add_months(date(2027, 11, 30), 3) == date(2028, 2, 29)
        assert add_months(date(2026, 12, 15), 1) == date(2027, 1, 15)

    def test_the_books_fine_bears_no_interest(self) -> None:
        b = compute_balance(vi("0.00", books_kept=False), as_of=date(2028, 1, 1))
        assert b.balance == D("100.00")


class TestPuertoRico:
    @pytest.mark.parametrize(
        ("days", "surcharge"), [(30, "0.00"), (31, "50.00"), (60, "50.00"), (61, "100.00")]
    )
    def test_surcharge_tiers(self, days: int, surcharge: str) -> None:
        due = date(2026, 11, 10)
        b = compute_balance(pr(declaration_filed_on=due), as_of=due + timedelta(days))
        assert component(b, "penalty")[0] == surcharge

    @pytest.mark.parametrize(
        ("days", "fine"),
        [(0, "0.00"), (1, "500.00"), (2, "1000.00"), (49, "24500.00"), (50, "25000.00"), (51, "25000.00")],
    )
    def test_late_declaration_fine(self, days: int, fine: str) -> None:
        due = date(2026, 11, 10)
        b = compute_balance(
            pr(declaration_filed_on=due + timedelta(days), payments=[pay("p", due, "1000.00")]),
            as_of=date(2027, 6, 1),
        )
        assert component(b, "fine")[0] == fine
        assert b.balance == D(fine)

    def test_deficiency_interest_replaces_the_s46_interest_after_the_notice(self) -> None:
        b = compute_balance(
            pr(
                declaration_filed_on=date(2026, 11, 10),
                deficiency_assessed_on=date(2027, 1, 31),
                bond_cover=D("400.00"),
            ),
            as_of=date(2027, 3, 2),
        )
        sections = {a["citation"] for a in b.trace if a["rule"] == "rule5.balance.interest"}
        assert sections == {"§46", "§33"}
        assert component(b, "interest")[0] == "28.22"

    def test_interest_paid_in_order_s46_before_s33(self) -> None:
        b = compute_balance(
            pr(
                declaration_filed_on=date(2026, 11, 10),
                deficiency_assessed_on=date(2027, 1, 31),
                payments=[pay("p", date(2027, 3, 2), "1125.00")],
            ),
            as_of=date(2027, 3, 2),
        )
        # tax first (1000.00), then the §46 surcharge (10% from day 91: 100.00), then interest:
        # the §46 interest up to the notice (1000.00 x 10% x 82/365 = 22.465753 -> 22.47)
        # before the §33 interest after it; 1125.00 - 1122.47 = 2.53 of the §33 interest.
        assert [(a.component, a.section, str(a.amount)) for a in b.applications] == [
            ("tax", "§24; §28(A)", "1000.00"),
            ("penalty", "§46", "100.00"),
            ("interest", "§46", "22.47"),
            ("interest", "§33", "2.53"),
        ]

    def test_books_fine_is_not_a_pr_rule(self) -> None:
        b = compute_balance(
            pr(books_kept=False, declaration_filed_on=date(2026, 11, 1)), as_of=date(2026, 11, 5)
        )
        assert b.balance == D("1000.00")
        assert any("no effect" in s["description"] for s in b.trace)


class TestPayments:
    def test_applications_follow_the_order_and_name_sections(self) -> None:
        b = compute_balance(
            vi(books_kept=False, payments=[pay("p", date(2026, 12, 1), "2000.00")]),
            as_of=date(2026, 12, 1),
        )
        # tax, then penalty, then interest, then fines (payments.application_order)
        assert b.applications == [
            Application(payment_id="p", component="tax", amount=D("1000.00"), section="§54(b)(1); §54(f)"),
            Application(payment_id="p", component="penalty", amount=D("50.00"), section="§54(i)(1)-(5)"),
            Application(payment_id="p", component="interest", amount=D("0.33"), section="§54(i)(6)"),
            Application(payment_id="p", component="fine", amount=D("100.00"), section="§54(l)"),
        ]
        assert b.credit == D("849.67")
        assert b.balance == D("0.00")

    def test_the_order_stays_a_parameter(self, tmp_path: Path) -> None:
        # an agency that reads accessory charges first edits one file: 1000.00 on day 1 pays
        # interest 0.33 and penalty 50.00 first, leaving 50.33 of tax unpaid
        tree = tree_with(
            tmp_path,
            "VI/payments/application_order.yaml",
            "description: test\nmetadata:\n  reference: {section: '§54(i)', title: t}\n"
            "  open_ended: true\nvalues:\n"
            "  2017-10-01: {value: [fine, interest, penalty, tax, impact_fee]}\n",
        )
        b = compute_balance(
            vi(payments=[pay("p", date(2026, 12, 1), "1000.00")]), as_of=date(2026, 12, 1), parameters=tree
        )
        assert component(b, "tax") == ("1000.00", "949.67", "50.33")
        paid = [pay("p", date(2026, 12, 1), "1000.00")]
        default = compute_balance(vi(payments=paid), as_of=date(2026, 12, 1))
        assert component(default, "tax") == ("1000.00", "1000.00", "0.00")

    def test_days_late_stops_when_the_principal_is_paid(self) -> None:
        b = compute_balance(vi(payments=[pay("p", date(2026, 12, 10), "2000.00")]), as_of=date(2027, 6, 1))
        assert b.days_late == 10
        assert b.balance == D("0.00")

    def test_same_day_payments_in_payment_id_order(self) -> None:
        b = compute_balance(
            vi(payments=[pay("b", date(2026, 11, 30), "600.00"), pay("a", date(2026, 11, 30), "600.00")]),
            as_of=date(2026, 11, 30),
        )
        assert [(a.payment_id, str(a.amount)) for a in b.applications] == [("a", "600.00"), ("b", "400.00")]
        assert b.credit == D("200.00")

    def test_credit_carries_across_payments(self) -> None:
        # An early overpayment pays later charges before newer money does.
        b = compute_balance(
            pr(payments=[pay("a", date(2026, 11, 10), "1200.00"), pay("b", date(2026, 11, 12), "5000.00")]),
            as_of=date(2026, 11, 12),
        )
        fine_apps = [(a.payment_id, str(a.amount)) for a in b.applications if a.component == "fine"]
        assert fine_apps == [("a", "200.00"), ("b", "800.00")]
        assert b.credit == D("4200.00")

    def test_past_statement_ignores_later_events(self) -> None:
        early = vi(payments=[pay("a", date(2026, 12, 5), "300.00")])
        later = vi(
            payments=[
                pay("a", date(2026, 12, 5), "300.00"),
                pay("b", date(2027, 2, 1), "500.00"),
                pay("c", date(2026, 12, 1), "50.00", reversed_on=date(2027, 3, 1)),
            ]
        )
        with_c = vi(payments=[pay("a", date(2026, 12, 5), "300.00"), pay("c", date(2026, 12, 1), "50.00")])
        as_of = date(2027, 1, 15)
        # Same statement; only the trace's list of ignored payments differs.
        assert compute_balance(later, as_of=as_of).model_dump(exclude={"trace"}) == compute_balance(
            with_c, as_of=as_of
        ).model_dump(exclude={"trace"})
        after_reversal = compute_balance(later, as_of=date(2027, 3, 1))
        assert "c" not in {a.payment_id for a in after_reversal.applications}
        assert compute_balance(early, as_of=date(2026, 12, 4)).balance > 0


class TestExplainFlag:
    def test_without_explanation_the_amounts_are_identical_and_the_trace_empty(self) -> None:
        history = vi("1000.00", payments=[pay("p1", date(2026, 3, 15), "400.00")])
        full = compute_balance(history, as_of=date(2026, 9, 1))
        quick = compute_balance(history, as_of=date(2026, 9, 1), explain=False)
        assert full.trace
        assert quick.trace == []
        assert quick.model_dump(exclude={"trace"}) == full.model_dump(exclude={"trace"})
