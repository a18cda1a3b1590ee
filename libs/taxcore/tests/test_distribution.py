"""Rule 6 — monthly distribution of collections to funds (PR §31; VI §54(e), (b)(3)(D))."""

from __future__ import annotations

import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from taxcore.errors import InvalidInput, ParameterError
from taxcore.parameters import PACKAGE_ROOT, ParameterTree, load_tree
from taxcore.periods import fiscal_year_months
from taxcore.rules.distribution import (
    DistributionResult,
    PRCertification,
    PRState,
    VIState,
    distribute_pr_month,
    distribute_vi_month,
    funds,
)

D = Decimal
EARMARKS = (
    "vi_tarf_virgin_islands_advertising",
    "vi_tarf_st_john_advertising",
    "vi_tarf_st_croix_advertising",
    "vi_tarf_marine_industry_advertising",
)
CERT = PRCertification(
    fiscal_year=2027, amount=D("10000000.00"), certified_on=date(2026, 6, 15), document_reference="B-27"
)


def alloc(result: DistributionResult) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for a in result.allocations:
        out[a.fund] = out.get(a.fund, D("0.00")) + a.amount
    return out


def conserved(result: DistributionResult) -> bool:
    return sum((a.amount for a in result.allocations), D(0)) + result.pending == result.collected


def run_pr(
    collections: list[str], cert: PRCertification | None = CERT, fy: int = 2027
) -> list[DistributionResult]:
    state: PRState | None = None
    results = []
    for period, amount in zip(fiscal_year_months("PR", fy), collections, strict=False):
        r = distribute_pr_month(month=str(period), collected=D(amount), certification=cert, state=state)
        assert isinstance(r.state, PRState)
        state = r.state
        results.append(r)
    return results


class TestFunds:
    def test_pr_funds(self) -> None:
        codes = [f.code for f in funds("PR", date(2026, 7, 1))]
        assert codes == [
            "pr_bank_special_account",
            "pr_company_administration",
            "pr_treasury_general_fund",
            "pr_convention_bureau",
            "pr_remainder",
        ]

    def test_vi_funds(self) -> None:
        vi = funds("VI", date(2026, 10, 1))
        assert [f.code for f in vi] == [
            "vi_tourism_advertising_revolving_fund",
            "vi_tarf_virgin_islands_advertising",
            "vi_tarf_st_john_advertising",
            "vi_tarf_st_croix_advertising",
            "vi_tarf_marine_industry_advertising",
            "vi_agriculture_revolving_fund",
            "vi_sports_tourism",
            "vi_department_of_education",
            "vi_sports_parks_recreation",
            "vi_general_fund",
        ]
        assert vi[0].section == "§54(e)(1)"
        assert [f.section for f in vi[1:5]] == [f"§54(e)(2)({n})" for n in range(1, 5)]
        assert vi[5].section == "§54(e)(1)(A)"


class TestPRFiscalYear:
    """Twelve months of FY2027 with a short month, an excess month and a Bureau catch-up."""

    COLLECTIONS = ["3000000.00", "500000.00", "4000000.00", "1200000.00"] + ["3000000.00"] * 8

    def test_the_year(self) -> None:
        results = run_pr(self.COLLECTIONS)
        assert all(conserved(r) and r.pending == 0 for r in results)
        bank = [alloc(r)["pr_bank_special_account"] for r in results]
        bureau = [alloc(r)["pr_convention_bureau"] for r in results]
        # Aug is short (500,000.00 of 1,000,000.00); Sep makes it up (1,500,000.00).
        assert bank == [D(x) for x in ["1000000.00", "500000.00", "1500000.00"]] + [D("1000000.00")] * 7 + [
            D("0.00"),
            D("0.00"),
        ]
        assert sum(bank) == D("10000000.00")
        # Bureau: 375,000.00 in Jul; nothing left in Aug; Sep catches up 750,000.00;
        # Oct only 116,000.00 left after the Bank and the 2% and 5%; Nov makes up 634,000.00.
        assert bureau[:5] == [D("375000.00"), D("0.00"), D("750000.00"), D("116000.00"), D("634000.00")]
        assert bureau[5:] == [D("375000.00")] * 7
        # 9% of 32,700,000.00 is 2,943,000.00: the Bureau gets its 4,500,000.00 floor.
        assert sum(bureau) == D("4500000.00")
        final = results[-1].state
        assert isinstance(final, PRState)
        assert final.debt_service_shortfall == 0
        assert final.collected == D("32700000.00")
        assert final.company_administration == sum(alloc(r)["pr_company_administration"] for r in results)
        total = sum((r.collected for r in results), D(0))
        assert total == sum((sum(alloc(r).values(), D(0)) for r in results), D(0))

    def test_first_year_installments_add_up_to_the_certification(self) -> None:
        cert = CERT.model_copy(update={"amount": D("1000000.00"), "first_year_months_remaining": 9})
        results = run_pr(["5000000.00"] * 12, cert=cert)
        bank = [alloc(r)["pr_bank_special_account"] for r in results]
        assert bank[:3] == [D("0.00")] * 3
        assert bank[3:] == [D("111111.11")] * 4 + [D("111111.12")] + [D("111111.11")] * 4
        assert sum(bank) == D("1000000.00")

    def test_a_year_too_poor_carries_the_shortfall_into_the_next(self) -> None:
        results = run_pr(["900000.00"] * 12)
        final = results[-1].state
        assert isinstance(final, PRState)
        # 12 x 900,000.00 = 10,800,000.00 all to the Bank up to 10,000,000.00: nothing short.
        assert final.debt_service_shortfall == 0
        poor = run_pr(["700000.00"] * 12)
        last = poor[-1].state
        assert isinstance(last, PRState)
        assert last.debt_service_shortfall == D("1600000.00")  # 10,000,000 - 12 x 700,000
        nxt = distribute_pr_month(
            month="2027-07",
            collected=D("5000000.00"),
            certification=CERT.model_copy(update={"fiscal_year": 2028}),
            state=last,
        )
        assert alloc(nxt)["pr_bank_special_account"] == D("2600000.00")
        assert isinstance(nxt.state, PRState)
        assert nxt.state.fiscal_year == 2028
        # The Bureau's floor restarts: 9% of 5,000,000.00 = 450,000.00 > 375,000.00.
        assert nxt.state.convention_bureau == D("450000.00")

    def test_uncertified_months_are_held_then_released(self) -> None:
        r1 = distribute_pr_month(month="2026-07", collected=D("100.00"), certification=None, state=None)
        assert isinstance(r1.state, PRState)
        r2 = distribute_pr_month(month="2026-08", collected=D("200.00"), certification=None, state=r1.state)
        assert (r1.pending, r2.pending, r2.allocations) == (D("100.00"), D("200.00"), [])
        assert isinstance(r2.state, PRState)
        assert r2.state.held == D("300.00")
        r3 = distribute_pr_month(
            month="2026-09", collected=D("3000000.00"), certification=CERT, state=r2.state
        )
        assert r3.released == D("300.00")
        assert r3.collected == D("3000300.00")
        assert r3.pending == 0
        assert conserved(r3)
        assert alloc(r3)["pr_bank_special_account"] == D("3000000.00")  # 3 months owed, all of it
        assert isinstance(r3.state, PRState)
        assert r3.state.held == 0
        assert any(s["citation"] == "§31(A)-(B)" for s in r1.trace)

    def test_trace_explains_each_share(self) -> None:
        r = run_pr(["3000000.00"])[0]
        rules = [s["rule"] for s in r.trace]
        assert rules == [
            "rule6.distribution.pr.debt_service",
            "rule6.distribution.pr.company_administration",
            "rule6.distribution.pr.treasury_general_fund",
            "rule6.distribution.pr.convention_bureau",
            "rule6.distribution.pr.remainder",
            "rule6.distribution.conservation",
        ]
        assert [a.section for a in r.allocations] == [
            "§31(A)",
            "§31(B)(i)",
            "§31(B)(ii)",
            "§31(B)(iii)",
            "§31(B) (provisional)",
        ]


class TestPRValidation:
    def test_state_from_a_later_year(self) -> None:
        with pytest.raises(InvalidInput) as info:
            distribute_pr_month(
                month="2026-07", collected=D("1"), certification=CERT, state=PRState(fiscal_year=2028)
            )
        assert info.value.field == "state"

    def test_bad_first_year_months(self) -> None:
        cert = CERT.model_copy(update={"first_year_months_remaining": 13})
        with pytest.raises(InvalidInput) as info:
            distribute_pr_month(month="2026-07", collected=D("1"), certification=cert, state=None)
        assert info.value.field == "certification.first_year_months_remaining"

    def test_sub_cent_collections(self) -> None:
        with pytest.raises(InvalidInput) as info:
            distribute_pr_month(month="2026-07", collected=D("1.001"), certification=CERT, state=None)
        assert info.value.field == "collected"

    def test_bad_month(self) -> None:
        with pytest.raises(InvalidInput) as info:
            distribute_pr_month(month="July", collected=D("1"), certification=CERT, state=None)
        assert info.value.field == "period"


class TestVIFiscalYear:
    """FY2027 (Oct 2026 - Sep 2027): the floors, Agriculture met by June 30."""

    def run(self, room: list[str], fee: str = "0.00") -> list[DistributionResult]:
        state: VIState | None = None
        results = []
        for period, amount in zip(fiscal_year_months("VI", 2027), room, strict=False):
            r = distribute_vi_month(month=str(period), room_tax=D(amount), impact_fee=D(fee), state=state)
            assert isinstance(r.state, VIState)
            state = r.state
            results.append(r)
        return results

    def test_floors_met_on_schedule(self) -> None:
        results = self.run(["400000.00"] * 12, fee="10000.00")
        assert all(conserved(r) for r in results)
        june = results[8]
        assert june.month == "2027-06"
        assert isinstance(june.state, VIState)
        assert june.state.floors_paid["vi_agriculture_revolving_fund"] == D("1000000.00")
        final = results[-1].state
        assert isinstance(final, VIState)
        assert final.floors_paid == {
            "vi_agriculture_revolving_fund": D("1000000.00"),
            "vi_sports_tourism": D("1000000.00"),
            "vi_department_of_education": D("500000.00"),
            "vi_sports_parks_recreation": D("500000.00"),
        }
        # 4,800,000.00 room tax - 3,000,000.00 floors = 1,800,000.00 ; 15% of 120,000.00 fee
        assert final.tarf_room_tax == D("1800000.00")
        assert final.tarf_impact_fee == D("18000.00")
        assert final.general_fund == D("102000.00")
        # the Fund's own account gets only room tax; its 18,000.00 of impact fee is earmarked
        totals: dict[str, Decimal] = {}
        for r in results:
            for fund, amount in alloc(r).items():
                totals[fund] = totals.get(fund, D("0.00")) + amount
        assert totals["vi_tourism_advertising_revolving_fund"] == D("1800000.00")
        for code in EARMARKS:
            assert totals[code] == D("4500.00")  # 25% x 18,000.00

    def test_a_slow_start_still_meets_agriculture_by_june(self) -> None:
        results = self.run(["50000.00"] * 5 + ["900000.00"] * 7)
        by_june = sum(alloc(r)["vi_agriculture_revolving_fund"] for r in results[:9])
        assert by_june == D("1000000.00")
        assert alloc(results[0]) == {
            "vi_agriculture_revolving_fund": D("50000.00"),
            "vi_sports_tourism": D("0.00"),
            "vi_department_of_education": D("0.00"),
            "vi_sports_parks_recreation": D("0.00"),
            "vi_tourism_advertising_revolving_fund": D("0.00"),
            **{code: D("0.00") for code in EARMARKS},
            "vi_general_fund": D("0.00"),
        }
        final = results[-1].state
        assert isinstance(final, VIState)
        assert sum(final.floors_paid.values()) == D("3000000.00")

    def test_impact_fee_tarf_share_goes_to_the_four_earmark_funds(self) -> None:
        r = distribute_vi_month(month="2026-10", room_tax=D("0"), impact_fee=D("1000.01"), state=None)
        step = next(s for s in r.trace if s["rule"] == "rule6.distribution.vi.impact_fee_tarf")
        assert step["result"] == "150.00"
        earmarked = [a for a in r.allocations if a.rule == "vi.impact_fee_tarf"]
        assert [(a.fund, a.amount) for a in earmarked] == [(code, D("37.50")) for code in EARMARKS]
        assert [a.section for a in earmarked] == [f"§54(b)(3)(D)(i); §54(e)(2)({n})" for n in range(1, 5)]
        steps = [s for s in r.trace if s["rule"] == "rule6.distribution.vi.impact_fee_tarf_earmark"]
        assert [s["result"] for s in steps] == ["37.50"] * 4
        assert all(s["parameters"]["provisional"] is True for s in steps)
        # the Fund's own account gets only the room tax after the floors (none this month)
        assert alloc(r)["vi_tourism_advertising_revolving_fund"] == D("0.00")
        assert alloc(r)["vi_general_fund"] == D("850.01")
        assert conserved(r)

    @pytest.mark.parametrize(
        ("fee", "shares", "general"),
        [
            # 15% x 2,468.10 = 370.215 -> 370.22; running totals 25% 92.555 -> 92.56,
            # 50% 185.11, 75% 277.665 -> 277.67, 100% 370.22: 92.56, 92.55, 92.56, 92.55
            ("2468.10", ["92.56", "92.55", "92.56", "92.55"], "2097.88"),
            # 15% x 0.13 = 0.0195 -> 0.02; running 0.005 -> 0.01, 0.01, 0.015 -> 0.02, 0.02
            ("0.13", ["0.01", "0.00", "0.01", "0.00"], "0.11"),
            # 15% x 0.07 = 0.0105 -> 0.01; running 0.0025 -> 0.00, 0.005 -> 0.01, 0.0075 -> 0.01, 0.01
            ("0.07", ["0.00", "0.01", "0.00", "0.00"], "0.06"),
        ],
    )
    def test_earmarks_round_on_the_running_total(self, fee: str, shares: list[str], general: str) -> None:
        r = distribute_vi_month(month="2026-10", room_tax=D("0"), impact_fee=D(fee), state=None)
        got = alloc(r)
        assert [got[code] for code in EARMARKS] == [D(x) for x in shares]
        assert got["vi_general_fund"] == D(general)
        assert isinstance(r.state, VIState)
        assert r.state.tarf_impact_fee == sum((D(x) for x in shares), D(0))
        assert conserved(r)

    def test_pending_is_always_zero(self) -> None:
        r = distribute_vi_month(month="2026-10", room_tax=D("5.00"), impact_fee=D("5.00"), state=None)
        assert r.pending == 0
        assert r.released == 0
        assert r.collected == D("10.00")

    def test_state_from_a_later_year(self) -> None:
        with pytest.raises(InvalidInput) as info:
            distribute_vi_month(
                month="2026-10", room_tax=D("1"), impact_fee=D("0"), state=VIState(fiscal_year=2028)
            )
        assert info.value.field == "state"


def _vi_tree_with_purposes(root: Path, old: str, new: str) -> ParameterTree:
    """The packaged tree with one edit to VI ``distribution.tarf_impact_fee_purposes``."""
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("*.py", "__pycache__", "py.typed"))
    file = root / "VI" / "distribution" / "tarf_impact_fee_purposes.yaml"
    text = file.read_text(encoding="utf-8")
    assert old in text
    file.write_text(text.replace(old, new, 1), encoding="utf-8")
    return load_tree(root)


class TestVIEarmarkParameters:
    """The §54(e)(2) shares are data, checked when a month is distributed."""

    def test_shares_must_add_up_to_one(self, tmp_path: Path) -> None:
        tree = _vi_tree_with_purposes(
            tmp_path / "root",
            "vi_tarf_st_john_advertising, rate: 0.25",
            "vi_tarf_st_john_advertising, rate: 0.20",
        )
        with pytest.raises(ParameterError) as info:
            distribute_vi_month(
                month="2026-10", room_tax=D("0"), impact_fee=D("100.00"), state=None, parameters=tree
            )
        assert info.value.field == "distribution.tarf_impact_fee_purposes"

    def test_an_earmark_fund_must_be_a_fund(self, tmp_path: Path) -> None:
        tree = _vi_tree_with_purposes(tmp_path / "root", "vi_tarf_st_croix_advertising", "vi_st_croix_typo")
        with pytest.raises(ParameterError) as info:
            distribute_vi_month(
                month="2026-10", room_tax=D("0"), impact_fee=D("100.00"), state=None, parameters=tree
            )
        assert info.value.field == "distribution.funds"
