"""``Trace.add`` builds its step without the frozen dataclass's ``__init__`` (issue 12: ~8
steps per return): the same step ``Step(...)`` builds, as frozen, with its own copies."""

from __future__ import annotations

import dataclasses
from datetime import date
from decimal import Decimal

import pytest

from taxcore.trace import NullTrace, Step, Trace


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


class TestRecord:
    def test_the_step_add_builds(self) -> None:
        inputs = {"line": "room_revenue"}
        parameters = {"base.lines": ["room_revenue"]}
        added, recorded = Trace(), Trace()
        added.add(
            "gross_receipts.line", "§24(A)", "Line", Decimal("1.00"), inputs=inputs, parameters=parameters
        )
        assert (
            recorded.record("gross_receipts.line", "§24(A)", "Line", Decimal("1.00"), inputs, parameters)
            is None
        )
        assert recorded.steps == added.steps
        assert type(recorded.steps[0]) is Step
        assert recorded.steps[0].parameters is not parameters  # its own copy of a shared cite
        assert recorded.steps[0].inputs is inputs  # the caller's dict, built for the step
        with pytest.raises(dataclasses.FrozenInstanceError):
            recorded.steps[0].result = Decimal("3.00")  # type: ignore[misc]

    def test_a_null_trace_records_nothing(self) -> None:
        trace = NullTrace()
        trace.record("tax", "§24(B)", "Tax", Decimal("1.00"), {}, {})
        assert trace.steps == []


class TestToList:
    """``Trace.to_list`` renders each step in one frame: the very dicts ``Step.to_dict`` gives."""

    def test_the_dicts_to_dict_gives(self) -> None:
        class Name(str):
            pass

        class Amount(Decimal):
            pass

        values: list[object] = [
            "text",
            Name("name"),
            3,
            True,
            None,
            Decimal("1.50"),
            Amount("2.25"),
            date(2026, 10, 1),
            ["a", "b"],
            ["a", Decimal("1.00"), date(2026, 10, 1), ("x", 2)],
            [],
            ("a", Decimal("3")),
            {"k": Decimal("4.00"), 5: ["z"], "d": {"e": date(2026, 1, 1)}},
            {},
            1.5,
        ]
        trace = Trace()
        for i, value in enumerate(values):
            trace.add(
                "rule",
                "§1",
                f"step {i}",
                value,  # type: ignore[arg-type]
                inputs={"value": value, 7: value},  # type: ignore[dict-item]
                parameters={"p": value},
            )
        trace.steps.append(Step("raw", "§2", "not dicts", None, ("a",), ()))  # type: ignore[arg-type]
        trace.steps.append(Step("raw", "§2", "empty", Amount("1"), {}, {}))
        rendered = trace.to_list()
        assert rendered == [s.to_dict() for s in trace.steps]
        assert _typed(rendered) == _typed([s.to_dict() for s in trace.steps])  # str subclasses too
        lists = [d["parameters"]["p"] for d in rendered[:-2] if type(d["parameters"]["p"]) is list]
        assert all(rendered_list is not value for rendered_list in lists for value in values)


def _typed(value: object) -> object:
    """``value`` with the type of every value in it (``==`` alone equates a ``str`` subclass)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value), value)
