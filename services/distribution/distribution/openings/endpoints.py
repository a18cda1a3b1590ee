from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from fastapi import Query

from distribution.models import OpeningState
from distribution.openings import repository, service
from distribution.openings.schemas import OpeningStateCreate, OpeningStateOut
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, AgencyReadDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.rows import from_row
from servicekit.runtime import RuntimeDep
from taxcore.jurisdictions import JurisdictionCode
from taxcore.periods import Period

router = make_router(prefix="/v1/opening-states", tags=["opening states"])
ERRORS = {**Forbidden.openapi(), **Conflict.openapi(), **ValidationFailed.openapi()}


def to_out(opening: OpeningState, current: bool) -> OpeningStateOut:
    return from_row(
        OpeningStateOut,
        opening,
        first_run_month=str(Period.parse(opening.through_month).next()),
        transferred={k: Decimal(v) for k, v in opening.transferred.items()},
        supersedes=opening.supersedes_id,
        current=current,
        entered_at=opening.created_at,
    )


@router.post(
    "",
    status_code=201,
    responses=ERRORS,
    summary="Declare what each fund received this fiscal year before the first run (go-live)",
)
async def declare_opening_state(
    body: OpeningStateCreate, session: SessionDep, principal: AdminDep, runtime: RuntimeDep
) -> OpeningStateOut:
    opening = await service.declare(session, data=body, actor=principal.actor, law=runtime.law)
    await session.refresh(opening)
    return to_out(opening, True)


@router.get(
    "",
    responses=Forbidden.openapi(),
    summary="Opening states and their corrections, by jurisdiction and version",
)
async def list_opening_states(
    session: SessionDep,
    _: AgencyReadDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    jurisdiction: Annotated[JurisdictionCode | None, Query()] = None,
) -> Page[OpeningStateOut]:
    after = decode_cursor(cursor, arity=2)
    rows = await repository.list_page(
        session, jurisdiction=jurisdiction, after=(after[0], int(after[1])) if after else None, limit=limit
    )
    return paginate(
        rows, limit=limit, key=lambda r: [r[0].jurisdiction, r[0].version], to_item=lambda r: to_out(*r)
    )


@router.get(
    "/{opening_state_id}",
    responses={**NotFound.openapi(), **Forbidden.openapi()},
    summary="One opening state",
)
async def get_opening_state(opening_state_id: str, session: SessionDep, _: AgencyReadDep) -> OpeningStateOut:
    return to_out(*await service.one(session, opening_state_id=opening_state_id))
