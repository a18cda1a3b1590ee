"""Declaration rule: bad input names the field; traces cite and add up."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from taxcore.errors import InvalidInput, ParameterError
from taxcore.jurisdictions import known_jurisdictions, lodging_classes, require_jurisdiction
from taxcore.rules._common import verify_trace
from taxcore.rules.declaration import (
    CompValuation,
    DeclarationInput,
    ExemptAmount,
    compute_declaration,
)

D = Decimal


def make(**kw: Any) -> DeclarationInput:
    base: dict[str, Any] = {
        "jurisdiction": "PR",
        "lodging_class": "hotel",
        "period": "2026-03",
        "room_revenue": D("1000.00"),
        "room_nights": 10,
    }
    base.update(kw)
    return DeclarationInput(**base)


class TestJurisdictions:
    def test_classes(self) -> None:
        assert lodging_classes("PR", date(2026, 1, 1)) == frozenset(
            {
                "hotel",
                "condohotel",
                "apartment_hotel",
                "all_inclusive_hotel",
                "hostelry",
                "guesthouse",
                "inn",
                "motel",
                "short_term_rental",
                "government_recreational_facility",
            }
        )
        assert lodging_classes("VI", date(2026, 1, 1)) == frozenset(
            {"hotel", "apartment_condominium_residence", "timeshare"}
        )

    def test_unknown(self) -> None:
        with pytest.raises(InvalidInput) as e:
            lodging_classes("XX", date(2026, 1, 1))
        assert e.value.field == "jurisdiction"
        with pytest.raises(InvalidInput):
            require_jurisdiction("pr")
        assert known_jurisdictions() == ["PR", "VI"]


class TestBadInput:
    @pytest.mark.parametrize(
        ("kw", "field"),
        [
            ({"jurisdiction": "XX"}, "jurisdiction"),
            ({"lodging_class": "castle"}, "lodging_class"),
            ({"period": "March"}, "period"),
            ({"room_revenue": D("-0.01")}, "room_revenue"),
            ({"room_penalties": D("1.001")}, "room_penalties"),
            ({"room_nights": -3}, "room_nights"),
            (
                {
                    "comp_rooms": [
                        CompValuation(
                            kind="comp",
                            room_nights=1,
                            average_daily_rate=D(-1),
                            room_cost=D(0),
                            industry_cost=D(0),
                        )
                    ]
                },
                "comp_rooms[0].average_daily_rate",
            ),
            (
                {"exempt": [ExemptAmount(exemption="vi_timeshare_owner", amount=D(1))]},
                "exempt[0].exemption",
            ),
            (
                {"exempt": [ExemptAmount(exemption="pr_film_production", amount=D(1), evidence="  ")]},
                "exempt[0].evidence",
            ),
        ],
    )
    def test_invalid_input_names_field(self, kw: dict[str, Any], field: str) -> None:
        with pytest.raises(InvalidInput) as e:
            compute_declaration(make(**kw))
        assert e.value.field == field

    def test_future_period(self) -> None:
        with pytest.raises(InvalidInput) as e:
            compute_declaration(make(period="2026-04"), today=date(2026, 3, 31))
        assert e.value.field == "period"
        # the current month may be computed (e.g. a preview)
        assert compute_declaration(make(period="2026-03"), today=date(2026, 3, 31)).tax == D("90.00")

    def test_future_period_across_a_year(self) -> None:
        with pytest.raises(InvalidInput) as e:
            compute_declaration(make(period="2027-01"), today=date(2026, 12, 31))
        assert e.value.field == "period"
        with pytest.raises(InvalidInput):
            compute_declaration(make(period="2027-02"), today=date(2026, 3, 31))  # a later month, fewer
        assert compute_declaration(make(period="2026-12"), today=date(2027, 1, 1)).tax == D("90.00")

    def test_date_outside_parameters(self) -> None:
        with pytest.raises(ParameterError):
            compute_declaration(make(period="1999-01"))

    def test_floats_are_refused(self) -> None:
        with pytest.raises(ValidationError) as e:
            make(room_revenue=1000.5)
        assert e.value.errors()[0]["loc"] == ("room_revenue",)
        with pytest.raises(ValidationError):
            ExemptAmount(exemption="pr_timeshare", amount=1.5)

    def test_non_finite_amounts_are_refused(self) -> None:
        with pytest.raises(ValidationError) as e:
            make(resort_and_other_fees=D("NaN"))
        assert e.value.errors()[0]["loc"] == ("resort_and_other_fees",)

    def test_unknown_fields_are_refused(self) -> None:
        with pytest.raises(ValidationError) as e:
            make(room_rev=D(1))
        assert e.value.errors()[0]["loc"] == ("room_rev",)

    def test_strings_are_accepted_as_amounts(self) -> None:
        assert compute_declaration(make(room_revenue="1000.00")).tax == D("90.00")


class TestTrace:
    def test_steps_cite_sections_and_parameters(self) -> None:
        result = compute_declaration(
            make(
                casino=True,
                comp_rooms=[
                    CompValuation(
                        kind="comp",
                        room_nights=2,
                        average_daily_rate=D(100),
                        room_cost=D(50),
                        industry_cost=D(75),
                    )
                ],
                exempt=[ExemptAmount(exemption="pr_timeshare", amount=D("100.00"))],
            )
        )
        rules = [s.rule for s in result.trace.steps]
        assert rules == [
            "gross_receipts.line",
            "gross_receipts.comp_valuation",
            "gross_receipts",
            "exemption",
            "taxable_base",
            "rate",
            "tax",
            "total_due",
        ]
        by_rule = {s.rule: s for s in result.trace.steps}
        assert by_rule["rate"].citation == "§24(B)"
        assert by_rule["rate"].parameters["rates.casino"] == D("0.11")
        assert by_rule["gross_receipts.comp_valuation"].citation == "§24(D)"
        assert by_rule["exemption"].citation == "§24(G)"
        assert by_rule["tax"].result == result.tax == D("121.00")
        assert verify_trace(result.trace) == []
        assert result.explain()[0]["result"] == "1000.00"

    def test_verify_trace_notices_a_wrong_total(self) -> None:
        result = compute_declaration(make())
        result.trace.add("taxable_base", "x", "tampered", D("1.00"), inputs={"sum_of": ["gross_receipts"]})
        assert verify_trace(result.trace) != []

    def test_vi_non_itemized_and_impact_fee_steps(self) -> None:
        result = compute_declaration(
            make(
                jurisdiction="VI", lodging_class="timeshare", tax_itemized=False, timeshare_owner_unit_days=4
            )
        )
        by_rule = {s.rule: s for s in result.trace.steps}
        assert by_rule["tax_not_itemized"].citation == "§54(c)"
        assert by_rule["impact_fee"].result == D("100.00")
        assert by_rule["total_due"].result == D("225.00")
        assert verify_trace(result.trace) == []

    def test_result_is_frozen(self) -> None:
        result = compute_declaration(make())
        with pytest.raises(ValidationError):
            result.tax = D(0)  # type: ignore[misc]
        assert result.currency == "USD"


def test_to_json() -> None:
    out = compute_declaration(make(room_revenue="1000.50")).to_json(explain=True)
    assert out["tax"] == "90.05"
    assert out["rate"] == "0.09"
    assert out["currency"] == "USD"
    assert out["trace"][-1]["rule"] == "total_due"
