"""The ranked risk list (agency only): each lodging's score, its factors, and how to open an audit."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, Field

from assessment import clock
from assessment.risk import service
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, ValidationFailed
from taxcore.errors import InvalidInput
from taxcore.jurisdictions import require_jurisdiction
from taxcore.money import fmt

router = make_router(prefix="/v1/risk-scores", tags=["risk scores"])


class FactorOut(BaseModel):
    factor: str
    value: str
    weight: str
    cap: str
    points: str
    explanation: str


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


@router.get(
    "",
    response_model=list[RiskOut],
    responses={**Forbidden.openapi(), **ValidationFailed.openapi()},
    summary="Lodgings ranked by audit risk, each factor explained (agency only; TADAT P2, P6-13)",
)
async def risk_scores(
    session: SessionDep,
    _: AgencyReadDep,
    jurisdiction: Annotated[str, Query(examples=["PR"])],
    as_of: Annotated[date | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[RiskOut]:
    try:
        require_jurisdiction(jurisdiction)
    except InvalidInput as exc:
        raise ValidationFailed.on("jurisdiction", exc.message, root="query") from None
    day = as_of or clock.today()
    rows = await service.ranked(session, jurisdiction=jurisdiction, as_of=day)
    out = []
    for i, r in enumerate(rows[:limit], start=1):
        lodging = r.risk.lodging
        scored = sorted((f for f in r.score.factors if f.points > 0), key=lambda f: -f.points)
        periods = sorted(r.risk.flagged_periods | set(r.late)) or r.window[-12:]
        out.append(
            RiskOut(
                rank=i,
                tax_account=lodging.tax_account,
                name=lodging.name,
                lodging_class=lodging.lodging_class,
                municipality=lodging.municipality,
                score=fmt(r.score.score),
                section=r.score.section,
                factors=[
                    FactorOut(
                        factor=f.factor,
                        value=fmt(f.value),
                        weight=str(f.weight),
                        cap=str(f.cap),
                        points=fmt(f.points),
                        explanation=f.explanation,
                    )
                    for f in r.score.factors
                ],
                reasons=[f.explanation for f in scored],
                window={"from": r.window[0], "to": r.window[-1], "as_of": day.isoformat()},
                open_audit={
                    "method": "POST",
                    "href": "/v1/audits",
                    "body": {
                        "tax_account": lodging.tax_account,
                        "periods": periods,
                        "reason": f"risk score {fmt(r.score.score)} (rank {i}) on {day.isoformat()}",
                        "source": "risk_score",
                    },
                },
            )
        )
    return out
