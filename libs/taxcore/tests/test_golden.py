"""Golden cases: data files a tax specialist can read and extend (``libs/taxcore/golden``).

Each file has ``rule`` and ``cases``; each case ``name``, ``jurisdiction``, ``date``,
``section``, ``input`` and ``output`` (exact strings). This module runs the files of
the declaration, periods, check, estimate, obligations, crosscheck and audit rules.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from taxcore_golden import golden_cases

from taxcore import obligations
from taxcore.errors import InvalidInput, ParameterError, TaxcoreError
from taxcore.parameters import default_tree
from taxcore.periods import Period, due_date, fiscal_year, fiscal_year_bounds, fiscal_year_months
from taxcore.rules._common import verify_trace
from taxcore.rules.audit import audit_difference
from taxcore.rules.check import DeclaredFigures, check_declaration
from taxcore.rules.crosscheck import LodgingPeriodData, cross_check
from taxcore.rules.declaration import DeclarationInput, compute_declaration
from taxcore.rules.estimate import estimate_assessment

RULES = ("declaration", "periods", "check", "estimate", "obligations", "crosscheck", "audit")
CASE_FIELDS = {"name", "jurisdiction", "date", "section", "input", "output"}


def _cases() -> list[Any]:
    params = []
    for rule in RULES:
        for name, case in golden_cases(f"*_{rule}.yaml", rule):
            assert set(case) == CASE_FIELDS, name
            params.append(pytest.param(rule, case, id=name))
    return params


CASES = _cases()


def _str(v: Any) -> Any:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, Decimal | int):
        return str(v)
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, list):
        return [_str(x) for x in v]
    raise TypeError(v)


def _history(raw: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in raw:
        if isinstance(item, dict):
            out.append({k: Decimal(v) for k, v in item.items()})
        else:
            out.append(Decimal(item))
    return out


def _run(rule: str, case: dict[str, Any]) -> dict[str, Any]:
    jur, today, inp = case["jurisdiction"], case["date"], case["input"]
    if rule == "declaration":
        result = compute_declaration(DeclarationInput(jurisdiction=jur, **inp), today=today)
        assert verify_trace(result.trace) == []
        fields = ("gross_receipts", "exempt_total", "taxable_base", "rate", "tax")
        out = {f: str(getattr(result, f)) for f in fields}
        out |= {"impact_fee": str(result.impact_fee), "total_due": str(result.total_due)}
        return out
    if rule == "audit":
        filed = DeclarationInput(jurisdiction=jur, **inp["filed"])
        corrected = DeclarationInput(jurisdiction=jur, **{**inp["filed"], **inp["corrected"]})
        return audit_difference(filed, corrected, parameters=default_tree()).to_json()
    if rule == "periods":
        if "due_date" in inp:
            return {"due_date": due_date(jur, Period.parse(inp["due_date"])).isoformat()}
        if "fiscal_year" in inp:
            return {"fiscal_year": str(fiscal_year(jur, today))}
        fy = inp["fiscal_year_bounds"]
        first, last = fiscal_year_bounds(jur, fy)
        return {
            "first": first.isoformat(),
            "last": last.isoformat(),
            "months": [str(p) for p in fiscal_year_months(jur, fy)],
        }
    if rule == "check":
        findings = check_declaration(
            DeclarationInput(jurisdiction=jur, **inp["declaration"]),
            DeclaredFigures(**inp["declared"]),
            today=today,
        )
        for f in findings:
            assert f.section
            assert f.message
        return {
            "findings": [
                {
                    "code": f.code,
                    "line": f.line,
                    "declared": _str(f.declared),
                    "computed": _str(f.computed),
                }
                for f in findings
            ]
        }
    if rule == "obligations":
        return _obligations(jur, inp)
    if rule == "crosscheck":
        return _crosscheck(jur, inp)
    assert rule == "estimate"
    args = dict(inp)
    args["history"] = _history(args["history"])
    for k in ("average_daily_rate", "room_cost", "industry_cost"):
        if k in args:
            args[k] = Decimal(args[k])
    est = estimate_assessment(jurisdiction=jur, today=today, **args)
    assert verify_trace(est.trace) == []
    out = {f: str(getattr(est, f)) for f in ("taxable_base", "rate", "tax", "impact_fee")}
    return out | {"total_due": str(est.total_due), "method": est.method}


def _crosscheck(jur: str, inp: dict[str, Any]) -> dict[str, Any]:
    period = inp["operator"]["period"]

    def declaration(raw: dict[str, Any]) -> DeclarationInput:
        return DeclarationInput(
            jurisdiction=jur, period=period, **{k: v for k, v in raw.items() if k != "period"}
        )

    certificates = inp.get("certificates")
    data = LodgingPeriodData(
        jurisdiction=jur,
        period=period,
        room_count=inp["room_count"],
        operator=declaration(inp["operator"]),
        intermediaries=[declaration(i) for i in inp.get("intermediaries", [])],
        peer_adrs=[Decimal(x) for x in inp.get("peer_adrs", [])],
        certificates=frozenset(certificates) if certificates is not None else None,
    )
    found = cross_check(data, parameters=default_tree())
    return {
        "findings": [
            {
                "rule": f.rule,
                "line": f.line,
                "declared": str(f.declared),
                "reported": str(f.reported),
                "difference": str(f.difference),
                "section": f.section,
            }
            for f in found
        ]
    }


def _day(raw: Any) -> date:
    return raw if isinstance(raw, date) else date.fromisoformat(str(raw))


def _obligations(jur: str, inp: dict[str, Any]) -> dict[str, Any]:
    period = Period.parse(inp["period"])
    if "filings" in inp:
        filings = [(k, _day(on)) for k, on in inp["filings"]]
        filed = obligations.declaration_filed_on(jur, period, filings)
        # the walk over an account's periods asks with the period's filers looked up once
        assert obligations.earliest_filed_by(filings, obligations.declaration_filers(jur, period)) == filed
        return {"declaration_filed_on": _str(filed)}
    history = [(_day(on), status) for on, status in inp["history"]]
    must = obligations.must_file(jur, period, registered_on=_day(inp["registered_on"]), history=history)
    return {"may_file_on": obligations.may_file_on(history, period).isoformat(), "must_file": str(must)}


@pytest.mark.parametrize(("rule", "case"), CASES)
def test_golden(rule: str, case: dict[str, Any]) -> None:
    expected = case["output"]
    if "error" in expected:
        error = {"InvalidInput": InvalidInput, "ParameterError": ParameterError}[expected["error"]]
        with pytest.raises(TaxcoreError) as info:
            _run(rule, case)
        assert type(info.value) is error, info.value
        assert info.value.field == expected["field"], info.value
        return
    as_is = rule in ("check", "crosscheck", "audit")
    expected = {k: _str(v) if not isinstance(v, list) or not as_is else v for k, v in expected.items()}
    assert _run(rule, case) == expected


def test_enough_cases_per_jurisdiction() -> None:
    counts: dict[str, int] = {}
    for p in CASES:
        jur = p.values[1]["jurisdiction"]
        counts[jur] = counts.get(jur, 0) + 1
    assert counts["PR"] >= 40
    assert counts["VI"] >= 40
