"""STYLE: a service function takes the session first and keyword-only arguments after ``*``.

Read from the source (``ast``), nothing imported or run. The modules written before the
rule was checked are listed in ``NOT_YET``; a listed module that complies fails the test
too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Service modules still taking positional arguments after the session (issue 11, item 8).
NOT_YET: frozenset[str] = frozenset()  # all comply since session 4; the list may not grow


def positional_after_session(source: str) -> list[str]:
    """Public functions of a module whose first parameter is ``session`` and that take
    another parameter before ``*``."""
    found: list[str] = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("_"):
            continue
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        if params[:1] == ["session"] and len(params) > 1:
            found.append(f"{node.name}({', '.join(params)}, *)")
    return found


def service_modules() -> list[Path]:
    return sorted(ROOT.glob("services/*/*/*/service.py"))


class TestServiceSignatures:
    def test_the_check_finds_a_positional_argument(self) -> None:
        source = (
            "async def good(session, *, lodging): ...\n"
            "async def bad(session, lodging, *, on): ...\n"
            "async def _private(session, row): ...\n"
            "def pure(facts, on): ...\n"
        )
        assert positional_after_session(source) == ["bad(session, lodging, *)"]

    def test_service_functions_are_keyword_only_after_the_session(self) -> None:
        offending = {
            str(p.relative_to(ROOT)): found
            for p in service_modules()
            if (found := positional_after_session(p.read_text()))
        }
        assert {k: v for k, v in offending.items() if k not in NOT_YET} == {}
        assert sorted(NOT_YET - offending.keys()) == [], "compliant now: remove from NOT_YET"

    def test_the_glob_reaches_every_domain_service(self) -> None:
        found = {str(p.relative_to(ROOT)) for p in service_modules()}
        assert "services/registry/registry/parties/service.py" in found
        assert NOT_YET <= found
