"""Issue 11, item 6: the law and the clock are passed in, not read from process globals.

No service module (outside its tests) calls ``default_tree()`` (the parameter tree an
environment variable selects), ``date.today()`` or ``datetime.now()``/``utcnow()``: a service
gets the law and the day from its :class:`servicekit.runtime.Runtime` (built once per process,
held on ``app.state`` and on each consumer) and passes them on as arguments. Read from the
source (``ast``), nothing imported or run.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: ``<receiver>.<method>()`` calls that read the machine's clock
CLOCK_CALLS = {("date", "today"), ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today")}
#: ``taxcore.parameters`` helpers that read ``default_tree()`` when given no tree
TREE_HELPERS = {"default_tree", "get", "value", "decimal_value", "int_value", "jurisdictions"}


def _name(node: ast.expr) -> str | None:
    """``x`` of ``x`` or ``a.b.x``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def global_reads(source: str) -> list[str]:
    """Each call of ``default_tree()``, ``date.today()`` or ``datetime.now()`` in the source, and
    each import of a ``taxcore.parameters`` helper that falls back to the default tree."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "taxcore.parameters":
            found += [f"line {node.lineno}: imports {a.name}" for a in node.names if a.name in TREE_HELPERS]
        elif isinstance(node, ast.ImportFrom) and node.module == "taxcore":
            found += [f"line {node.lineno}: imports parameters" for a in node.names if a.name == "parameters"]
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if _name(func) == "default_tree":
            found.append(f"line {node.lineno}: default_tree()")
        elif isinstance(func, ast.Attribute) and (_name(func.value), func.attr) in CLOCK_CALLS:
            found.append(f"line {node.lineno}: {_name(func.value)}.{func.attr}()")
    return found


def service_sources() -> list[Path]:
    return sorted(p for p in ROOT.glob("services/*/*/**/*.py") if "tests" not in p.relative_to(ROOT).parts)


class TestNoGlobalLawOrClock:
    def test_the_check_finds_each_kind_of_read(self) -> None:
        source = (
            "from datetime import UTC, date, datetime\n"
            "import datetime as dt\n"
            "from taxcore import parameters\n"
            "a = parameters.default_tree()\n"
            "b = date.today()\n"
            "c = datetime.now(UTC)\n"
            "d = dt.datetime.now()\n"
            "e = runtime.today(), runtime.law, clock.now()\n"
            "from taxcore.parameters import ParameterTree, value\n"
        )
        assert sorted(global_reads(source)) == [
            "line 3: imports parameters",
            "line 4: default_tree()",
            "line 5: date.today()",
            "line 6: datetime.now()",
            "line 7: datetime.now()",
            "line 9: imports value",
        ]

    def test_no_service_module_reads_the_law_or_the_clock_from_globals(self) -> None:
        offending = {
            str(p.relative_to(ROOT)): found
            for p in service_sources()
            if (found := global_reads(p.read_text()))
        }
        assert offending == {}

    def test_the_glob_reaches_every_service_and_no_clock_module_is_left(self) -> None:
        found = {str(p.relative_to(ROOT)) for p in service_sources()}
        for module in (
            "services/registry/registry/lodgings/service.py",
            "services/filing/filing/declarations/endpoints.py",
            "services/assessment/assessment/accounts/ledger.py",
            "services/distribution/distribution/ledger/accounts.py",
            "services/notify/notify/mail/sender.py",
            "services/web/web/pages/portal.py",
        ):
            assert module in found
        assert not any(p.endswith("/clock.py") for p in found)
        assert not any("/tests/" in p for p in found)
