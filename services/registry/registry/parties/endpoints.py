"""Operators (hoteliers) and facilitators (online intermediaries)."""

from __future__ import annotations

from registry.parties import repository, service
from registry.parties.schemas import FacilitatorCreate, FacilitatorOut, OperatorOut, PartyCreate
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.rows import from_row

router = make_router(prefix="/v1", tags=["operators and facilitators"])


@router.post("/operators", status_code=201, responses=ValidationFailed.openapi())
async def create_operator(body: PartyCreate, session: SessionDep, _: AdminDep) -> OperatorOut:
    return from_row(OperatorOut, await service.register_operator(session, body=body))


@router.get("/operators")
async def list_operators(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[OperatorOut]:
    after = decode_cursor(cursor, arity=1)
    rows = await repository.operators_page(session, principal, limit=limit, after=after)
    return paginate(rows, limit=limit, key=lambda r: [r.id], to_item=lambda r: from_row(OperatorOut, r))


@router.get("/operators/{operator_id}", responses=NotFound.openapi())
async def get_operator(operator_id: str, session: SessionDep, principal: PrincipalDep) -> OperatorOut:
    operator = await service.visible_operator(session, principal=principal, operator_id=operator_id)
    return from_row(OperatorOut, operator)


@router.post("/facilitators", status_code=201, responses=ValidationFailed.openapi())
async def create_facilitator(body: FacilitatorCreate, session: SessionDep, _: AdminDep) -> FacilitatorOut:
    return from_row(FacilitatorOut, await service.register_facilitator(session, body=body))


@router.get("/facilitators")
async def list_facilitators(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[FacilitatorOut]:
    after = decode_cursor(cursor, arity=1)
    rows = await repository.facilitators_page(session, principal, limit=limit, after=after)
    return paginate(rows, limit=limit, key=lambda r: [r.id], to_item=lambda r: from_row(FacilitatorOut, r))


@router.get("/facilitators/{facilitator_id}", responses=NotFound.openapi())
async def get_facilitator(
    facilitator_id: str, session: SessionDep, principal: PrincipalDep
) -> FacilitatorOut:
    return from_row(
        FacilitatorOut,
        await service.visible_facilitator(session, principal=principal, facilitator_id=facilitator_id),
    )
