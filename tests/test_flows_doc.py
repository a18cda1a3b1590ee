"""docs/flows.md stays honest: every ``file:function`` it names exists, in that file; every
``A`` → ``B`` it writes is a call ``A`` makes; every event it names travels on the topic the
page says; every handler it names is registered by its service's consumers."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker

from servicekit.consumer import ContractHandler, EventConsumer
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings
from taxcore.events import EventData, is_contract

ROOT = Path(__file__).resolve().parent.parent
FLOWS = ROOT / "docs" / "flows.md"
_HOP = r"`((?:services|libs)/[\w/]+\.py):([\w.]+)`"
HOP = re.compile(_HOP)
# `A` → `B` (also `A`) → `B`, and in `A` → `B` → `C` both pairs: the second hop is a lookahead
ARROW = re.compile(_HOP + r"\)?\s*→\s*(?=" + _HOP + ")")


def hops(text: str) -> list[tuple[str, str]]:
    return HOP.findall(text)


def arrows(text: str) -> list[tuple[str, str, str, str]]:
    return ARROW.findall(text)


def steps(text: str) -> dict[str, str]:
    """The page's numbered steps and paragraphs that name a hop (an event and its topic are
    said in one), by flow and number: ``payment 5``, ``payment note`` (the chassis's: ``chassis 3``)."""
    out: dict[str, str] = {}
    flow = "chassis"
    for block in re.split(r"\n(?=\d+\. )|\n\s*\n", text):
        if block.startswith("## "):
            flow = block.removeprefix("## A ").split(" (")[0]
        elif HOP.search(block):
            number = re.match(r"\d+", block)
            key = f"{flow} {number.group() if number else 'note'}"
            out[key + ("'" if key in out else "")] = block
    return out


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


def function_of(obj: object) -> Any:
    """The function defining a hop (a ``@handles`` handler wraps its function)."""
    fn: Any = getattr(obj, "fn", obj)
    return inspect.unwrap(fn)


def calls(obj: object, name: str) -> bool:
    """Whether the code of ``obj`` (not its docstring) uses ``name`` (a call, or the function
    passed on: ``partial(service.decide, ...)``, ``lambda: book_collections(...)``)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function_of(obj))))
    short = name.split(".")[-1]
    return any(
        (isinstance(node, ast.Name) and node.id == short)
        or (isinstance(node, ast.Attribute) and node.attr == short)
        for node in ast.walk(tree)
    )


def registered(handler: ContractHandler[Any], service: str) -> list[str]:
    """The consumers of ``service`` that subscribe to the topic of every contract ``handler``
    takes and hand it that contract's events."""
    module = importlib.import_module(f"{service}.consumers")
    # a session factory bound to no database: consumers are built, never run
    built: list[EventConsumer] = module.consumers(
        ServiceSettings(environment="test"), async_sessionmaker(), Runtime.from_environment()
    )
    return [
        c.name
        for c in built
        if all(c.handlers.get(t) is handler and k.topic in c.topics for t, k in handler.contracts.items())
    ]


class TestFlowsDoc:
    def test_the_five_flows_are_described(self) -> None:
        headings = [line for line in FLOWS.read_text().splitlines() if line.startswith("## ")]
        assert [h.split(" (")[0] for h in headings] == [
            "## A declaration",
            "## A payment",
            "## A refund of credit",
            "## A payment plan",
            "## A bond draw",
        ]

    def test_the_pattern_reads_hops(self) -> None:
        text = "see `services/filing/filing/payments/service.py:record_payment` and `x.py:y`"
        assert hops(text) == [("services/filing/filing/payments/service.py", "record_payment")]

    @pytest.mark.parametrize(("path", "name"), sorted(set(hops(FLOWS.read_text()))))
    def test_each_named_function_exists_where_the_page_says(self, path: str, name: str) -> None:
        obj = resolve(path, name)
        assert callable(obj), f"{path}:{name} is not callable"
        defined = function_of(obj)
        source = inspect.getsourcefile(defined)
        assert source is not None
        assert Path(source).resolve() == (ROOT / path).resolve(), f"{name} is defined in {source}, not {path}"

    def test_a_missing_function_is_caught(self) -> None:
        with pytest.raises(AttributeError):
            resolve("services/filing/filing/payments/service.py", "no_such_use_case")

    def test_the_pattern_reads_arrows(self) -> None:
        a, b, c = (f"`libs/x/x/m.py:{n}`" for n in "abc")
        assert arrows(f"{a} → {b} →\n   {c}; {a} (or {b}) → {c}; {a}, {b}") == [
            ("libs/x/x/m.py", "a", "libs/x/x/m.py", "b"),
            ("libs/x/x/m.py", "b", "libs/x/x/m.py", "c"),
            ("libs/x/x/m.py", "b", "libs/x/x/m.py", "c"),
        ]

    @pytest.mark.parametrize(("path", "name", "to_path", "to_name"), sorted(set(arrows(FLOWS.read_text()))))
    def test_each_arrow_is_a_call(self, path: str, name: str, to_path: str, to_name: str) -> None:
        resolve(to_path, to_name)
        assert calls(resolve(path, name), to_name), f"{path}:{name} does not use {to_name}"

    def test_a_call_not_made_is_caught(self) -> None:
        assert calls(resolve("services/filing/filing/payments/service.py", "record_payment"), "emit")
        accounts = "services/assessment/assessment/accounts/service.py"
        assert not calls(resolve(accounts, "recompute"), "book_collections")
        # its docstring names recompute; its code calls recompute_accounts: a docstring does not count
        assert not calls(resolve(accounts, "recompute_after_batch"), "recompute")
        assert calls(resolve(accounts, "recompute_after_batch"), "recompute_accounts")

    @pytest.mark.parametrize("step", sorted(steps(FLOWS.read_text())))
    def test_each_event_is_said_with_its_contracts_topic(self, step: str) -> None:
        block = steps(FLOWS.read_text())[step]
        for path, name in hops(block):
            obj = resolve(path, name)
            if isinstance(obj, type) and issubclass(obj, EventData) and is_contract(obj):
                assert f"`{obj.topic}`" in block, (
                    f"{name} travels on {obj.topic}, which this step does not say"
                )

    @pytest.mark.parametrize(
        ("path", "name"),
        sorted({(p, n) for p, n in hops(FLOWS.read_text()) if isinstance(resolve(p, n), ContractHandler)}),
    )
    def test_each_handler_is_registered_by_its_service(self, path: str, name: str) -> None:
        handler = resolve(path, name)
        assert isinstance(handler, ContractHandler)
        assert registered(handler, path.split("/")[1]), f"no consumer of {path.split('/')[1]} runs {name}"
