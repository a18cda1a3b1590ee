"""API models of the ranked risk list."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from assessment.rows import from_row
from taxcore.money import fmt

if TYPE_CHECKING:
    from assessment.risk.service import Ranked
    from taxcore.rules.risk import RiskFactor


class FactorOut(BaseModel):
    factor: str
    value: str
    weight: str
    cap: str
    points: str
    explanation: str

    @classmethod
    def of(cls, f: RiskFactor) -> FactorOut:
        return cls(
            factor=f.factor,
            value=fmt(f.value),
            weight=str(f.weight),
            cap=str(f.cap),
            points=fmt(f.points),
            explanation=f.explanation,
        )


class RiskOut(BaseModel):
    rank: int
    tax_account: str
    name: str
    lodging_class: str
    municipality: str
    score: str
    section: str
    factors: list[FactorOut]
    reasons: list[str] = Field(description="the factors that scored, highest first")
    window: dict[str, str]
    open_audit: dict[str, Any] = Field(description="the request that opens an audit from this row")

    @classmethod
    def of(cls, rank: int, r: Ranked, *, as_of: date) -> RiskOut:
        """The ranked lodging, each factor explained, and the request that opens its audit."""
        lodging = r.risk.lodging
        scored = sorted((f for f in r.score.factors if f.points > 0), key=lambda f: -f.points)
        periods = sorted(r.risk.flagged_periods | set(r.late)) or r.window[-12:]
        return from_row(
            cls,
            lodging,
            rank=rank,
            score=fmt(r.score.score),
            section=r.score.section,
            factors=[FactorOut.of(f) for f in r.score.factors],
            reasons=[f.explanation for f in scored],
            window={"from": r.window[0], "to": r.window[-1], "as_of": as_of.isoformat()},
            open_audit={
                "method": "POST",
                "href": "/v1/audits",
                "body": {
                    "tax_account": lodging.tax_account,
                    "periods": periods,
                    "reason": f"risk score {fmt(r.score.score)} (rank {rank}) on {as_of.isoformat()}",
                    "source": "risk_score",
                },
            },
        )
