"""``ROOMTAX_TODAY`` pins the day every process of a deployment computes with (pure, no I/O)."""

from __future__ import annotations

from datetime import date

import pytest

from servicekit.runtime import PinnedClock, SystemClock, clock_from_environment


class TestClockFromEnvironment:
    def test_unset_or_blank_is_the_machines_clock(self) -> None:
        assert clock_from_environment({}) == SystemClock()
        assert clock_from_environment({"ROOMTAX_TODAY": "  "}) == SystemClock()

    def test_an_iso_date_pins_today(self) -> None:
        clock = clock_from_environment({"ROOMTAX_TODAY": "2026-12-01"})
        assert isinstance(clock, PinnedClock)
        assert (clock.day, clock.today()) == (date(2026, 12, 1), date(2026, 12, 1))

    def test_anything_else_stops_the_process_naming_the_variable(self) -> None:
        with pytest.raises(ValueError, match="^ROOMTAX_TODAY=") as refused:
            clock_from_environment({"ROOMTAX_TODAY": "1/12/2026"})
        assert str(refused.value) == "ROOMTAX_TODAY='1/12/2026' is not a date (YYYY-MM-DD)"
