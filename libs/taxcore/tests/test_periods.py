"""Tax periods, due dates and fiscal years."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from taxcore import parameters as P
from taxcore.errors import InvalidInput
from taxcore.periods import (
    Period,
    due_date,
    fiscal_year,
    fiscal_year_bounds,
    fiscal_year_months,
    is_business_day,
)


class TestPeriod:
    def test_parse_and_str(self) -> None:
        p = Period.parse("2026-10")
        assert (p.year, p.month, str(p)) == (2026, 10, "2026-10")

    @pytest.mark.parametrize("text", ["2026-13", "2026-00", "2026-1", "26-10", "2026/10", "", "2026-10-01"])
    def test_malformed(self, text: str) -> None:
        with pytest.raises(InvalidInput) as e:
            Period.parse(text)
        assert e.value.field == "period"

    def test_days_next_prev(self) -> None:
        feb = Period(2028, 2)
        assert (feb.first_day, feb.last_day, feb.days) == (date(2028, 2, 1), date(2028, 2, 29), 29)
        assert Period(2027, 2).last_day == date(2027, 2, 28)
        assert Period(2026, 12).next() == Period(2027, 1)
        assert Period(2027, 1).prev() == Period(2026, 12)
        assert Period(2026, 12).last_day == date(2026, 12, 31)
        assert Period.of(date(2026, 7, 31)) == Period(2026, 7)

    def test_order_and_arithmetic(self) -> None:
        assert Period(2026, 12) < Period(2027, 1)
        assert sorted([Period(2027, 1), Period(2026, 2)]) == [Period(2026, 2), Period(2027, 1)]
        assert Period(2026, 11).add_months(3) == Period(2027, 2)
        assert Period(2026, 11).add_months(-11) == Period(2025, 12)
        assert Period(2026, 11).months_until(Period(2027, 2)) == 3

    def test_frozen(self) -> None:
        p = Period(2026, 1)
        with pytest.raises(AttributeError):
            p.year = 2027  # type: ignore[misc]


class TestDueDate:
    def test_pr_tenth_of_following_month(self) -> None:
        assert due_date("PR", Period(2026, 10)) == date(2026, 11, 10)

    def test_vi_thirty_days_after_month_end(self) -> None:
        assert due_date("VI", Period(2026, 1)) == date(2026, 3, 2)

    def test_unknown_jurisdiction(self) -> None:
        with pytest.raises(InvalidInput) as e:
            due_date("ZZ", Period(2026, 1))
        assert e.value.field == "jurisdiction"

    def test_roll_forward_is_a_parameter(self, tmp_path: Path) -> None:
        for src in P.PACKAGE_ROOT.rglob("*.yaml"):
            target = tmp_path / src.relative_to(P.PACKAGE_ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text(encoding="utf-8")
            if src.name == "due_roll_forward.yaml":
                text = text.replace("value: false", "value: true")
            if src.name == "holidays.yaml" and src.parent.parent.name == "PR":
                text = text.replace("value: []", 'value: ["2026-10-12"]')
            target.write_text(text, encoding="utf-8")
        tree = P.load_tree(tmp_path)
        # 2026-10-10 is a Saturday; Monday 2026-10-12 is a listed holiday.
        assert due_date("PR", Period(2026, 9)) == date(2026, 10, 10)
        assert due_date("PR", Period(2026, 9), parameters=tree) == date(2026, 10, 13)
        assert not is_business_day("PR", date(2026, 10, 12), parameters=tree)
        # VI 2026-05 is due 2026-06-30 (Tuesday): unchanged
        assert due_date("VI", Period(2026, 5), parameters=tree) == date(2026, 6, 30)


class TestFiscalYear:
    def test_pr_edges(self) -> None:
        assert fiscal_year("PR", date(2026, 6, 30)) == 2026
        assert fiscal_year("PR", date(2026, 7, 1)) == 2027
        assert fiscal_year_bounds("PR", 2027) == (date(2026, 7, 1), date(2027, 6, 30))

    def test_vi_edges(self) -> None:
        assert fiscal_year("VI", date(2026, 9, 30)) == 2026
        assert fiscal_year("VI", date(2026, 10, 1)) == 2027
        assert fiscal_year_bounds("VI", 2027) == (date(2026, 10, 1), date(2027, 9, 30))

    def test_months_cover_the_bounds(self) -> None:
        for jur in ("PR", "VI"):
            months = fiscal_year_months(jur, 2028)
            first, last = fiscal_year_bounds(jur, 2028)
            assert len(months) == 12
            assert (months[0].first_day, months[-1].last_day) == (first, last)
            assert all(fiscal_year(jur, m.first_day) == 2028 for m in months)
