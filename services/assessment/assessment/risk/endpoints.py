"""The ranked risk list (agency only): each lodging's score, its factors, and how to open an audit."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Query

from assessment.risk import service
from assessment.risk.schemas import RiskOut
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, ValidationFailed
from servicekit.runtime import RuntimeDep
from taxcore.errors import InvalidInput
from taxcore.jurisdictions import require_jurisdiction

router = make_router(prefix="/v1/risk-scores", tags=["risk scores"])


@router.get(
    "",
    responses={**Forbidden.openapi(), **ValidationFailed.openapi()},
    summary="Lodgings ranked by audit risk, each factor explained (agency only; TADAT P2, P6-13)",
)
async def risk_scores(
    session: SessionDep,
    _: AgencyReadDep,
    jurisdiction: Annotated[str, Query(examples=["PR"])],
    runtime: RuntimeDep,
    as_of: Annotated[date | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[RiskOut]:
    try:
        require_jurisdiction(jurisdiction, parameters=runtime.law)
    except InvalidInput as exc:
        raise ValidationFailed.on("jurisdiction", exc.message, root="query") from None
    day = as_of or runtime.today()
    rows = await service.ranked(session, jurisdiction=jurisdiction, as_of=day, law=runtime.law)
    return [RiskOut.of(i, r, as_of=day) for i, r in enumerate(rows[:limit], start=1)]
