"""``Trace.add`` builds its step without the frozen dataclass's ``__init__`` (issue 12: ~8
steps per return): the same step ``Step(...)`` builds, as frozen, with its own copies."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from taxcore.trace import Step, Trace


class TestTraceAdd:
    def test_the_step_step_builds(self) -> None:
        inputs = {"line": "room_revenue"}
        parameters = {"base.lines": ["room_revenue"]}
        trace = Trace()
        result = trace.add(
            "gross_receipts.line", "§24(A)", "Line", Decimal("1.00"), inputs=inputs, parameters=parameters
        )
        assert result == Decimal("1.00")
        (step,) = trace.steps
        assert type(step) is Step
        assert step == Step("gross_receipts.line", "§24(A)", "Line", Decimal("1.00"), inputs, parameters)
        assert step.to_dict() == {
            "rule": "gross_receipts.line",
            "citation": "§24(A)",
            "description": "Line",
            "inputs": {"line": "room_revenue"},
            "parameters": {"base.lines": ["room_revenue"]},
            "result": "1.00",
        }
        assert step.inputs is not inputs  # its own copies
        assert step.parameters is not parameters

    def test_without_inputs_or_parameters(self) -> None:
        trace = Trace()
        trace.add("tax", "§24(B)", "Tax", None)
        assert trace.steps == [Step("tax", "§24(B)", "Tax", None, {}, {})]

    def test_frozen(self) -> None:
        trace = Trace()
        trace.add("tax", "§24(B)", "Tax", Decimal("2.00"))
        with pytest.raises(dataclasses.FrozenInstanceError):
            trace.steps[0].result = Decimal("3.00")  # type: ignore[misc]
