"""Distribution conserves money, for any collections (hypothesis)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taxcore.periods import Period, fiscal_year
from taxcore.rules.distribution import (
    DistributionResult,
    PRCertification,
    PRState,
    VIState,
    distribute_pr_month,
    distribute_vi_month,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

amounts = st.one_of(
    st.integers(0, 100).map(lambda c: Decimal(c).scaleb(-2)),
    st.integers(0, 1_500_000_000).map(lambda c: Decimal(c).scaleb(-2)),
)


def _check(result: DistributionResult) -> None:
    total = sum((a.amount for a in result.allocations), Decimal(0))
    assert total + result.pending == result.collected
    assert result.collected == result.collected_in_month + result.released
    assert result.pending >= 0
    for a in result.allocations:
        assert a.amount >= 0, a
        assert a.amount == a.amount.quantize(Decimal("0.01")), a


class TestDistributionConservesMoney:
    @SETTINGS
    @given(
        start=st.integers(0, 30),
        months=st.lists(st.tuples(amounts, st.booleans()), min_size=1, max_size=26),
        certified=amounts,
        first_year=st.one_of(st.none(), st.integers(1, 12)),
    )
    def test_pr(
        self,
        start: int,
        months: list[tuple[Decimal, bool]],
        certified: Decimal,
        first_year: int | None,
    ) -> None:
        period = Period(2026, 1).add_months(start)
        state: PRState | None = None
        held = Decimal(0)
        for collected, has_cert in months:
            fy = fiscal_year("PR", period.first_day)
            cert = (
                PRCertification(
                    fiscal_year=fy,
                    amount=certified,
                    certified_on=date(2025, 1, 1),
                    document_reference="x",
                    first_year_months_remaining=first_year,
                )
                if has_cert
                else None
            )
            result = distribute_pr_month(
                month=str(period), collected=collected, certification=cert, state=state
            )
            _check(result)
            assert isinstance(result.state, PRState)
            held += result.pending - result.released
            assert result.state.held == held
            bank = sum(
                (a.amount for a in result.allocations if a.fund == "pr_bank_special_account"),
                Decimal(0),
            )
            assert bank <= result.collected
            assert result.state.debt_service_transferred <= certified * 2  # at most this year's + arrears
            state = result.state
            period = period.next()

    @SETTINGS
    @given(
        start=st.integers(0, 30),
        months=st.lists(st.tuples(amounts, amounts), min_size=1, max_size=26),
    )
    def test_vi(self, start: int, months: list[tuple[Decimal, Decimal]]) -> None:
        period = Period(2026, 1).add_months(start)
        state: VIState | None = None
        for room_tax, impact_fee in months:
            result = distribute_vi_month(
                month=str(period), room_tax=room_tax, impact_fee=impact_fee, state=state
            )
            _check(result)
            assert result.collected == room_tax + impact_fee
            assert result.pending == 0
            assert isinstance(result.state, VIState)
            floors = {
                "vi_agriculture_revolving_fund": Decimal("1000000"),
                "vi_sports_tourism": Decimal("1000000"),
                "vi_department_of_education": Decimal("500000"),
                "vi_sports_parks_recreation": Decimal("500000"),
            }
            for fund, paid in result.state.floors_paid.items():
                assert paid <= floors[fund]
            state = result.state
            period = period.next()
