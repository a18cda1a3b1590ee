"""A projected lodging's class and casino licence in force in a period (PR §2(16)):
``attributes_in`` builds the registration values only when no entry of the history is in
force, and answers as ``attributes_for_period`` with them as the default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import pytest

from taxcore.events.registry import AttributePeriod, attributes_for_period, attributes_in
from taxcore.periods import Period


@dataclass(frozen=True)
class _Lodging:
    jurisdiction: str = "PR"
    registered_on: date = date(2024, 1, 1)
    lodging_class: str = "inn"
    casino: bool = True
    statuses: Sequence[Mapping[str, Any]] = ()
    attributes: Sequence[Mapping[str, Any]] = field(default_factory=list)


def _entry(since: str, cls: str, casino: bool = False) -> dict[str, Any]:
    return {"effective_from": since, "lodging_class": cls, "casino": casino}


HISTORIES = {
    "none": [],
    "from registration": [_entry("2024-01-01", "hotel")],
    "only after the period": [_entry("2025-07-01", "hotel")],
    "changed during the history": [_entry("2024-01-01", "hotel"), _entry("2025-03-01", "motel", True)],
    "out of order": [_entry("2025-03-01", "motel", True), _entry("2024-01-01", "hotel")],
    "two on one day: the later entry": [_entry("2024-06-01", "hotel"), _entry("2024-06-01", "motel")],
}


class TestAttributesIn:
    @pytest.mark.parametrize("history", HISTORIES.values(), ids=HISTORIES.keys())
    @pytest.mark.parametrize("period", ["2023-12", "2024-06", "2025-02", "2025-03", "2026-01"])
    def test_as_attributes_for_period(self, history: list[dict[str, Any]], period: str) -> None:
        lodging = _Lodging(attributes=history)
        default = AttributePeriod(effective_from=lodging.registered_on, lodging_class="inn", casino=True)
        expected = attributes_for_period(
            [AttributePeriod.model_validate(a) for a in history], Period.parse(period), default=default
        )
        assert attributes_in(lodging, Period.parse(period)) == expected

    def test_the_registration_values_before_any_entry(self) -> None:
        lodging = _Lodging(attributes=[_entry("2025-07-01", "hotel")])
        assert attributes_in(lodging, Period.parse("2025-06")) == AttributePeriod(
            effective_from=date(2024, 1, 1), lodging_class="inn", casino=True
        )

    def test_the_entry_in_force(self) -> None:
        lodging = _Lodging(attributes=HISTORIES["changed during the history"])
        assert attributes_in(lodging, Period.parse("2025-03")) == AttributePeriod(
            effective_from=date(2025, 3, 1), lodging_class="motel", casino=True
        )
        assert attributes_in(lodging, Period.parse("2025-02")).lodging_class == "hotel"
