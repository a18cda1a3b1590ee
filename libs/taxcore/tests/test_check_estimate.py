"""Check and estimate rules beyond the golden cases."""

from __future__ import annotations

from decimal import Decimal

import pytest

from taxcore.errors import InvalidInput
from taxcore.rules.check import FINDING_CODES, DeclaredFigures, check_declaration, review_declaration
from taxcore.rules.declaration import DeclarationInput, ExemptAmount, compute_allowed, compute_declaration
from taxcore.rules.estimate import estimate_assessment

D = Decimal


class TestCheckDeclaration:
    def test_sections_cited(self) -> None:
        inp = DeclarationInput(
            jurisdiction="PR",
            lodging_class="hotel",
            period="2026-03",
            room_revenue=D("100.00"),
            room_nights=1,
            exempt=[ExemptAmount(exemption="pr_film_production", amount=D("10.00"))],
        )
        findings = check_declaration(inp, DeclaredFigures(taxable_base=None, tax=D("8.10")))
        sections = {(f.code, f.line): f.section for f in findings}
        assert sections[("omission", "taxable_base")] == "§2(18)(iii)"
        assert sections[("omission", "exempt[0].evidence")] == "§2(18)(iii); §24(F)"
        assert {f.code for f in findings} <= set(FINDING_CODES)

    def test_strict_compute_refuses_what_check_reports(self) -> None:
        inp = DeclarationInput(
            jurisdiction="VI",
            lodging_class="hotel",
            period="2026-03",
            room_revenue=D("100.00"),
            room_nights=1,
            exempt=[ExemptAmount(exemption="vi_long_stay", amount=D("10.00"))],
        )
        with pytest.raises(InvalidInput):
            compute_declaration(inp)
        findings = check_declaration(inp, DeclaredFigures(taxable_base=D("90.00"), tax=D("11.25")))
        assert [f.code for f in findings] == [
            "inconsistent_entries",
            "deduction_beyond_limit",
            "tax_understated",
        ]

    def test_allowed_figures_disallow_the_unevidenced_claim(self) -> None:
        """A film exemption without its certificate (PR §24(F)) is disallowed, not refused:
        base 100.00, tax 9% = 9.00 (§24(B)); the review gives the same figures and its findings."""
        inp = DeclarationInput(
            jurisdiction="PR",
            lodging_class="hotel",
            period="2026-03",
            room_revenue=D("100.00"),
            room_nights=1,
            exempt=[ExemptAmount(exemption="pr_film_production", amount=D("10.00"))],
        )
        with pytest.raises(InvalidInput) as refused:
            compute_declaration(inp)
        assert refused.value.field == "exempt[0].evidence"
        allowed = compute_allowed(inp)
        assert (allowed.taxable_base, allowed.tax, allowed.total_due) == (D("100.00"), D("9.00"), D("9.00"))
        review = review_declaration(inp, DeclaredFigures(taxable_base=D("90.00"), tax=D("8.10")))
        assert review.result.tax == allowed.tax
        assert review.findings == check_declaration(
            inp, DeclaredFigures(taxable_base=D("90.00"), tax=D("8.10"))
        )
        assert [(f.code, f.line) for f in review.findings] == [
            ("omission", "exempt[0].evidence"),
            ("inconsistent_entries", "taxable_base"),
            ("tax_understated", "tax"),
        ]

    def test_structural_errors_still_raise(self) -> None:
        inp = DeclarationInput(jurisdiction="PR", lodging_class="castle", period="2026-03")
        with pytest.raises(InvalidInput) as e:
            check_declaration(inp, DeclaredFigures(taxable_base=D(0), tax=D(0)))
        assert e.value.field == "lodging_class"


class TestEstimate:
    def test_history_of_declaration_results(self) -> None:
        filed = [
            compute_declaration(
                DeclarationInput(
                    jurisdiction="VI",
                    lodging_class="timeshare",
                    period=f"2026-0{m}",
                    room_revenue=D(f"{m}000.00"),
                    room_nights=10,
                    timeshare_owner_unit_days=m,
                )
            )
            for m in (1, 2, 3)
        ]
        est = estimate_assessment(
            jurisdiction="VI",
            lodging_class="timeshare",
            casino=False,
            period="2026-04",
            history=filed,
            room_count=0,
        )
        assert (est.taxable_base, est.tax, est.impact_fee, est.total_due) == (
            D("3000.00"),
            D("375.00"),
            D("75.00"),
            D("450.00"),
        )
        assert est.method == "history"

    @pytest.mark.parametrize(
        ("kw", "field"),
        [
            ({"room_cost": D("-1")}, "room_cost"),
            ({"lodging_class": "castle"}, "lodging_class"),
            ({"jurisdiction": "ZZ"}, "jurisdiction"),
            ({"history": [D("-5")]}, "history[0]"),
            ({"period": "2026-13"}, "period"),
        ],
    )
    def test_bad_input(self, kw: dict[str, object], field: str) -> None:
        args: dict[str, object] = {
            "jurisdiction": "PR",
            "lodging_class": "hotel",
            "casino": False,
            "period": "2026-03",
            "history": [],
            "room_count": 1,
            "average_daily_rate": D(1),
        }
        args.update(kw)
        with pytest.raises(InvalidInput) as e:
            estimate_assessment(**args)  # type: ignore[arg-type]
        assert e.value.field == field
