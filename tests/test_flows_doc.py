"""docs/flows.md stays honest: every ``file:function`` it names exists, in that file."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOWS = ROOT / "docs" / "flows.md"
HOP = re.compile(r"`((?:services|libs)/[\w/]+\.py):([\w.]+)`")


def hops(text: str) -> list[tuple[str, str]]:
    return HOP.findall(text)


def module_of(path: str) -> str:
    """``services/filing/filing/payments/service.py`` -> ``filing.payments.service``."""
    parts = Path(path).with_suffix("").parts
    assert parts[0] in ("services", "libs"), path
    assert parts[1] == parts[2], path
    return ".".join(parts[2:])


def resolve(path: str, name: str) -> object:
    obj: object = importlib.import_module(module_of(path))
    for attr in name.split("."):
        obj = getattr(obj, attr)
    return obj


class TestFlowsDoc:
    def test_the_four_flows_are_described(self) -> None:
        headings = [line for line in FLOWS.read_text().splitlines() if line.startswith("## ")]
        assert [h.split(" (")[0] for h in headings] == [
            "## A declaration",
            "## A payment",
            "## A refund of credit",
            "## A bond draw",
        ]

    def test_the_pattern_reads_hops(self) -> None:
        text = "see `services/filing/filing/payments/service.py:record_payment` and `x.py:y`"
        assert hops(text) == [("services/filing/filing/payments/service.py", "record_payment")]

    @pytest.mark.parametrize(("path", "name"), sorted(set(hops(FLOWS.read_text()))))
    def test_each_named_function_exists_where_the_page_says(self, path: str, name: str) -> None:
        obj = resolve(path, name)
        assert callable(obj), f"{path}:{name} is not callable"
        defined = inspect.unwrap(getattr(obj, "fn", obj))  # a @handles handler wraps its function
        source = inspect.getsourcefile(defined)
        assert source is not None
        assert Path(source).resolve() == (ROOT / path).resolve(), f"{name} is defined in {source}, not {path}"

    def test_a_missing_function_is_caught(self) -> None:
        with pytest.raises(AttributeError):
            resolve("services/filing/filing/payments/service.py", "no_such_use_case")
