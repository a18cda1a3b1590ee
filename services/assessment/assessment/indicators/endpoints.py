"""``GET /v1/indicators``: the TADAT outcome indicators, agency-only."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Query

from assessment.indicators import service
from assessment.indicators.schemas import IndicatorsOut
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, ValidationFailed
from servicekit.runtime import RuntimeDep
from taxcore.errors import TaxcoreError
from taxcore.periods import Period

router = make_router(prefix="/v1/indicators", tags=["indicators"])
PERIOD = r"^\d{4}-(0[1-9]|1[0-2])$"


@router.get(
    "",
    response_model_by_alias=True,
    responses={**Forbidden.openapi(), **ValidationFailed.openapi()},
    summary="TADAT indicators for a jurisdiction and a window of periods, each with its definition",
)
async def get_indicators(
    session: SessionDep,
    principal: PrincipalDep,
    jurisdiction: Annotated[str, Query(pattern=r"^[A-Z]{2}$")],
    from_: Annotated[str, Query(alias="from", pattern=PERIOD, description="first period, YYYY-MM")],
    to: Annotated[str, Query(pattern=PERIOD, description="last period, YYYY-MM")],
    runtime: RuntimeDep,
    as_of: Annotated[date | None, Query(description="records known on this day (default today)")] = None,
) -> IndicatorsOut:
    if not principal.is_agency:
        raise Forbidden("the indicators are for the agency")
    on = as_of or runtime.today()
    if on > runtime.today():
        raise ValidationFailed.on("as_of", "is in the future", root="query")
    try:
        return await service.compute(
            session,
            jurisdiction=jurisdiction,
            first=Period.parse(from_),
            last=Period.parse(to),
            as_of=on,
            law=runtime.law,
        )
    except TaxcoreError as exc:  # a jurisdiction without parameters for the window
        raise ValidationFailed.on("jurisdiction", exc.message, root="query") from None
