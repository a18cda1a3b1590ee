"""Go-live: the first run starts from a declared opening state, not from an empty fiscal year."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from taxcore.errors import InvalidInput
from taxcore.rules.distribution import (
    DistributionResult,
    OpeningState,
    PRCertification,
    distribute_month,
    opening_state,
)

D = Decimal
CERT = PRCertification(
    fiscal_year=2027, amount=D("1200000.00"), certified_on=date(2026, 6, 15), document_reference="BGF-27"
)
#: July and August 2026 run outside the platform, $1,000,000 of Tax each, by §31 (see below)
PR_OPENING = OpeningState(
    jurisdiction="PR",
    fiscal_year=2027,
    through_month="2026-08",
    transferred={
        "pr_bank_special_account": D("240000.00"),
        "pr_company_administration": D("40000.00"),
        "pr_treasury_general_fund": D("100000.00"),
        "pr_convention_bureau": D("750000.00"),
        "pr_remainder": D("870000.00"),
    },
)


def alloc(result: DistributionResult) -> dict[str, Decimal]:
    return {a.fund: a.amount for a in result.allocations}


def pr_september(state: object) -> DistributionResult:
    return distribute_month(
        "PR", month="2026-09", amounts={"tax": D("2000000.00")}, certification=CERT, state=state
    )


class TestPuertoRico:
    def test_first_run_without_an_opening_state_catches_up_july_and_august(self) -> None:
        # September is month 3 of FY 2027: the Bank is owed 3 x 120,000 = 360,000; the Company
        # 2% x 2,000,000 = 40,000; the Treasury 5% = 100,000; the Bureau max(9% x 2,000,000
        # = 180,000, 3 x 375,000 = 1,125,000) = 1,125,000 (three months of floor at once);
        # the remainder 2,000,000 - 1,625,000 = 375,000.
        assert alloc(pr_september(None)) == {
            "pr_bank_special_account": D("360000.00"),
            "pr_company_administration": D("40000.00"),
            "pr_treasury_general_fund": D("100000.00"),
            "pr_convention_bureau": D("1125000.00"),
            "pr_remainder": D("375000.00"),
        }

    def test_first_run_from_the_opening_state_pays_september_only(self) -> None:
        opened = opening_state(PR_OPENING)
        assert opened.state.last_month == "2026-08"
        # Bank: 360,000 scheduled - 240,000 received = 120,000; Company 40,000; Treasury
        # 100,000; Bureau: max(9% x (2,000,000 + 2,000,000) = 360,000, 1,125,000) = 1,125,000
        # less the 750,000 received = 375,000; remainder 2,000,000 - 635,000 = 1,365,000.
        result = pr_september(opened.state)
        assert alloc(result) == {
            "pr_bank_special_account": D("120000.00"),
            "pr_company_administration": D("40000.00"),
            "pr_treasury_general_fund": D("100000.00"),
            "pr_convention_bureau": D("375000.00"),
            "pr_remainder": D("1365000.00"),
        }
        assert result.state.model_dump()["convention_bureau"] == D("1125000.00")
        assert result.state.model_dump()["debt_service_transferred"] == D("360000.00")
        assert [t["rule"] for t in opened.trace] == ["rule6.distribution.pr.opening"]

    def test_a_bank_shortfall_before_go_live_is_made_up_once(self) -> None:
        short = PR_OPENING.model_copy(
            update={"transferred": {**PR_OPENING.transferred, "pr_bank_special_account": D("200000.00")}}
        )
        result = pr_september(opening_state(short).state)
        # 360,000 scheduled - 200,000 received = 160,000 (120,000 + the 40,000 short)
        assert alloc(result)["pr_bank_special_account"] == D("160000.00")


class TestVirginIslands:
    AMOUNTS = {"tax": D("1500000.00"), "impact_fee": D("40000.00")}

    def test_first_run_without_an_opening_state_catches_up_october_to_december(self) -> None:
        # January is month 4 of FY 2027 (October - September): Agriculture 1,000,000 x 4/9 =
        # 444,444.44; sports tourism 1,000,000 x 4/12 = 333,333.33; Education and Sports,
        # Parks and Recreation 500,000 x 4/12 = 166,666.67 each; the Fund 1,500,000 -
        # 1,111,111.11 = 388,888.89. Impact fee: 15% = 6,000 (1,500 to each earmark), 34,000.
        result = distribute_month("VI", month="2027-01", amounts=self.AMOUNTS, certification=None, state=None)
        got = alloc(result)
        assert {k: got[k] for k in sorted(got) if not k.startswith("vi_tarf_")} == {
            "vi_agriculture_revolving_fund": D("444444.44"),
            "vi_department_of_education": D("166666.67"),
            "vi_general_fund": D("34000.00"),
            "vi_sports_parks_recreation": D("166666.67"),
            "vi_sports_tourism": D("333333.33"),
            "vi_tourism_advertising_revolving_fund": D("388888.89"),
        }

    def test_first_run_from_the_opening_state_pays_january_only(self) -> None:
        opening = OpeningState(
            jurisdiction="VI",
            fiscal_year=2027,
            through_month="2026-12",
            transferred={
                "vi_agriculture_revolving_fund": D("333333.33"),
                "vi_sports_tourism": D("250000.00"),
                "vi_department_of_education": D("125000.00"),
                "vi_sports_parks_recreation": D("125000.00"),
                "vi_tourism_advertising_revolving_fund": D("2000000.00"),
                "vi_tarf_virgin_islands_advertising": D("3750.00"),
                "vi_tarf_st_john_advertising": D("3750.00"),
                "vi_tarf_st_croix_advertising": D("3750.00"),
                "vi_tarf_marine_industry_advertising": D("3750.00"),
                "vi_general_fund": D("85000.00"),
            },
        )
        opened = opening_state(opening)
        state = opened.state.model_dump()
        assert (state["room_tax"], state["impact_fee"]) == (D("2833333.33"), D("100000.00"))
        result = distribute_month(
            "VI", month="2027-01", amounts=self.AMOUNTS, certification=None, state=opened.state
        )
        got = alloc(result)
        # floors owed by month 4 less what they received: Agriculture 444,444.44 - 333,333.33
        # = 111,111.11; sports tourism 333,333.33 - 250,000 = 83,333.33; Education and SPR
        # 166,666.67 - 125,000 = 41,666.67 each; the Fund 1,500,000 - 277,777.78 = 1,222,222.22
        assert {k: got[k] for k in sorted(got) if not k.startswith("vi_tarf_")} == {
            "vi_agriculture_revolving_fund": D("111111.11"),
            "vi_department_of_education": D("41666.67"),
            "vi_general_fund": D("34000.00"),
            "vi_sports_parks_recreation": D("41666.67"),
            "vi_sports_tourism": D("83333.33"),
            "vi_tourism_advertising_revolving_fund": D("1222222.22"),
        }


class TestValidation:
    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"through_month": "2026-06"}, "through_month"),  # FY 2026, not 2027
            ({"through_month": "August"}, "through_month"),
            ({"transferred": {"vi_general_fund": D("1.00")}}, "transferred.vi_general_fund"),
            ({"transferred": {"pr_remainder": D("-1.00")}}, "transferred.pr_remainder"),
            ({"transferred": {"pr_remainder": D("1.001")}}, "transferred.pr_remainder"),
        ],
    )
    def test_errors_name_the_field(self, change: dict[str, object], field: str) -> None:
        with pytest.raises(InvalidInput) as err:
            opening_state(PR_OPENING.model_copy(update=change))
        assert err.value.field == field

    def test_a_run_of_a_month_already_covered_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as err:
            distribute_month(
                "PR",
                month="2026-08",
                amounts={"tax": D("1.00")},
                certification=CERT,
                state=opening_state(PR_OPENING).state,
            )
        assert err.value.field == "month"
