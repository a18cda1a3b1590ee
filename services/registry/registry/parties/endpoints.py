"""Operators (hoteliers) and facilitators (online intermediaries)."""

from __future__ import annotations

from registry.models import Facilitator, Operator
from registry.parties import repository, service
from registry.parties.schemas import FacilitatorCreate, FacilitatorOut, OperatorOut, PartyCreate
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate

router = make_router(prefix="/v1", tags=["operators and facilitators"])


def _operator_out(o: Operator) -> OperatorOut:
    return OperatorOut(id=o.id, name=o.name, email=o.email, tax_id=o.tax_id, created_at=o.created_at)


def _facilitator_out(f: Facilitator) -> FacilitatorOut:
    return FacilitatorOut(
        id=f.id, name=f.name, email=f.email, operator_id=f.operator_id, created_at=f.created_at
    )


@router.post("/operators", status_code=201, responses=ValidationFailed.openapi())
async def create_operator(body: PartyCreate, session: SessionDep, _: AdminDep) -> OperatorOut:
    return _operator_out(await service.register_operator(session, body=body))


@router.get("/operators")
async def list_operators(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[OperatorOut]:
    after = decode_cursor(cursor, arity=1)
    rows = await repository.operators_page(session, principal, limit=limit, after=after)
    return paginate(rows, limit=limit, key=lambda r: [r.id], to_item=_operator_out)


@router.get("/operators/{operator_id}", responses=NotFound.openapi())
async def get_operator(operator_id: str, session: SessionDep, principal: PrincipalDep) -> OperatorOut:
    operator = await service.visible_operator(session, principal=principal, operator_id=operator_id)
    return _operator_out(operator)


@router.post("/facilitators", status_code=201, responses=ValidationFailed.openapi())
async def create_facilitator(body: FacilitatorCreate, session: SessionDep, _: AdminDep) -> FacilitatorOut:
    return _facilitator_out(await service.register_facilitator(session, body=body))


@router.get("/facilitators")
async def list_facilitators(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[FacilitatorOut]:
    after = decode_cursor(cursor, arity=1)
    rows = await repository.facilitators_page(session, principal, limit=limit, after=after)
    return paginate(rows, limit=limit, key=lambda r: [r.id], to_item=_facilitator_out)


@router.get("/facilitators/{facilitator_id}", responses=NotFound.openapi())
async def get_facilitator(
    facilitator_id: str, session: SessionDep, principal: PrincipalDep
) -> FacilitatorOut:
    return _facilitator_out(
        await service.visible_facilitator(session, principal=principal, facilitator_id=facilitator_id)
    )
