"""The audit-selection risk score of a lodging (TADAT P2, P6-13): transparent, weighted, cited.

PR §10 and §3(E) (VI §54(d)) give the administration the power to audit and to examine
records; which lodging to audit first is the administration's choice. The score is the sum
of one term per factor, ``weight x min(value, cap)`` (parameter ``risk.weights``), and every
term is returned with its value, weight, cap, points and an explanation, so the ranked list
shows why a lodging is where it is.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict

from taxcore.errors import ParameterError
from taxcore.money import fmt, round_cents
from taxcore.parameters import ParameterTree
from taxcore.rules._common import Ref, as_decimal, param

__all__ = ["FACTORS", "RiskFactor", "RiskInputs", "RiskScore", "risk_score"]

FactorName = Literal["findings", "late", "gap", "adr", "arrears", "months_since_audit"]
FACTORS: tuple[FactorName, ...] = ("findings", "late", "gap", "adr", "arrears", "months_since_audit")
THOUSAND = Decimal(1000)


class RiskInputs(BaseModel):
    """What the service knows of one lodging over the look-back window."""

    model_config = ConfigDict(frozen=True)

    jurisdiction: str
    findings: int  # cross-check findings other than ADR anomalies
    late_periods: int
    crosscheck_gap: Decimal  # sum of the intermediary shortfalls found
    adr_anomalies: int
    arrears: Decimal  # balance past due
    months_since_audit: int | None  # None: never audited


class RiskFactor(BaseModel):
    model_config = ConfigDict(frozen=True)

    factor: FactorName
    value: Decimal
    weight: Decimal
    cap: Decimal
    points: Decimal
    explanation: str


class RiskScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    score: Decimal
    factors: list[RiskFactor]
    section: str


def _weights(ref: Ref) -> dict[str, tuple[Decimal, Decimal]]:
    raw = ref.value
    if not isinstance(raw, dict) or any(f not in raw or not isinstance(raw[f], dict) for f in FACTORS):
        raise ParameterError(ref.path, "must give weight and cap for every factor")
    out: dict[str, tuple[Decimal, Decimal]] = {}
    for f in FACTORS:
        w = as_decimal(Ref(f"{ref.path}.{f}.weight", raw[f].get("weight"), ref.section, ref.provisional, {}))
        c = as_decimal(Ref(f"{ref.path}.{f}.cap", raw[f].get("cap"), ref.section, ref.provisional, {}))
        out[f] = (w, c)
    return out


def _values(inp: RiskInputs, cap_audit: Decimal) -> dict[FactorName, tuple[Decimal, str]]:
    gap_k = inp.crosscheck_gap / THOUSAND
    arrears_k = inp.arrears / THOUSAND
    if inp.months_since_audit is None:
        audit = (cap_audit, "never audited (counted at the cap)")
    else:
        audit = (
            Decimal(inp.months_since_audit),
            f"{inp.months_since_audit} months since the last audit closed",
        )
    return {
        "findings": (Decimal(inp.findings), f"{inp.findings} cross-check findings"),
        "late": (Decimal(inp.late_periods), f"{inp.late_periods} periods filed late"),
        "gap": (gap_k, f"{fmt(inp.crosscheck_gap)} below what intermediaries reported (per 1,000)"),
        "adr": (
            Decimal(inp.adr_anomalies),
            f"{inp.adr_anomalies} average daily rates outside the peer range",
        ),
        "arrears": (arrears_k, f"{fmt(inp.arrears)} past due (per 1,000)"),
        "months_since_audit": audit,
    }


def risk_score(inp: RiskInputs, *, on: date, parameters: ParameterTree) -> RiskScore:
    """The lodging's score on ``on``: the sum of each factor's capped, weighted value."""
    ref = param(parameters, inp.jurisdiction, "risk.weights", on)
    weights = _weights(ref)
    values = _values(inp, weights["months_since_audit"][1])
    factors: list[RiskFactor] = []
    for f in FACTORS:
        weight, cap = weights[f]
        value, why = values[f]
        points = round_cents(weight * min(value, cap))
        factors.append(
            RiskFactor(
                factor=f,
                value=round_cents(value),
                weight=weight,
                cap=cap,
                points=points,
                explanation=f"{why}: {weight} x min({fmt(round_cents(value))}, {cap}) = {fmt(points)}",
            )
        )
    return RiskScore(score=sum((x.points for x in factors), Decimal(0)), factors=factors, section=ref.section)
