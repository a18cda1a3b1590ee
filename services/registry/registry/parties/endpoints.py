"""Operators (hoteliers) and facilitators (online intermediaries)."""

from __future__ import annotations

from sqlalchemy import select

from registry.models import Facilitator, Operator
from registry.parties.schemas import FacilitatorCreate, FacilitatorOut, OperatorOut, PartyCreate
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound, ValidationFailed
from servicekit.outbox import emit
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from taxcore.events import registry as ev

router = make_router(prefix="/v1", tags=["operators and facilitators"])


def _operator_out(o: Operator) -> OperatorOut:
    return OperatorOut(id=o.id, name=o.name, email=o.email, tax_id=o.tax_id, created_at=o.created_at)


def _facilitator_out(f: Facilitator) -> FacilitatorOut:
    return FacilitatorOut(
        id=f.id, name=f.name, email=f.email, operator_id=f.operator_id, created_at=f.created_at
    )


@router.post("/operators", status_code=201, response_model=OperatorOut, responses=ValidationFailed.openapi())
async def create_operator(body: PartyCreate, session: SessionDep, _: AdminDep) -> OperatorOut:
    operator = Operator(name=body.name, email=body.email, tax_id=body.tax_id)
    session.add(operator)
    await session.flush()
    await session.refresh(operator)
    await emit(
        session,
        event_type="roomtax.registry.operator.registered.v1",
        key=operator.id,
        data=ev.OperatorRegistered(operator_id=operator.id, name=operator.name, email=operator.email),
    )
    return _operator_out(operator)


@router.get("/operators", response_model=Page[OperatorOut])
async def list_operators(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[OperatorOut]:
    stmt = select(Operator).order_by(Operator.id).limit(limit + 1)
    if not principal.is_agency:
        stmt = stmt.where(Operator.id == (principal.operator_id or ""))
    after = decode_cursor(cursor, arity=1)
    if after:
        stmt = stmt.where(Operator.id > after[0])
    rows = (await session.execute(stmt)).scalars().all()
    return paginate(rows, limit=limit, key=lambda r: [r.id], to_item=_operator_out)


@router.get("/operators/{operator_id}", response_model=OperatorOut, responses=NotFound.openapi())
async def get_operator(operator_id: str, session: SessionDep, principal: PrincipalDep) -> OperatorOut:
    operator = await session.get(Operator, operator_id)
    if operator is None or not (principal.is_agency or principal.operator_id == operator_id):
        raise NotFound(f"no operator {operator_id!r}")
    return _operator_out(operator)


@router.post(
    "/facilitators", status_code=201, response_model=FacilitatorOut, responses=ValidationFailed.openapi()
)
async def create_facilitator(body: FacilitatorCreate, session: SessionDep, _: AdminDep) -> FacilitatorOut:
    if body.operator_id is not None and await session.get(Operator, body.operator_id) is None:
        raise ValidationFailed.on("operator_id", "no operator with this id")
    facilitator = Facilitator(name=body.name, email=body.email, operator_id=body.operator_id)
    session.add(facilitator)
    await session.flush()
    await session.refresh(facilitator)
    await emit(
        session,
        event_type="roomtax.registry.facilitator.registered.v1",
        key=facilitator.id,
        data=ev.FacilitatorRegistered(
            facilitator_id=facilitator.id, name=facilitator.name, email=facilitator.email
        ),
    )
    return _facilitator_out(facilitator)


@router.get("/facilitators", response_model=Page[FacilitatorOut])
async def list_facilitators(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[FacilitatorOut]:
    stmt = select(Facilitator).order_by(Facilitator.id).limit(limit + 1)
    if not principal.is_agency:
        stmt = stmt.where(Facilitator.id == (principal.facilitator_id or ""))
    after = decode_cursor(cursor, arity=1)
    if after:
        stmt = stmt.where(Facilitator.id > after[0])
    rows = (await session.execute(stmt)).scalars().all()
    return paginate(rows, limit=limit, key=lambda r: [r.id], to_item=_facilitator_out)


@router.get("/facilitators/{facilitator_id}", response_model=FacilitatorOut, responses=NotFound.openapi())
async def get_facilitator(
    facilitator_id: str, session: SessionDep, principal: PrincipalDep
) -> FacilitatorOut:
    facilitator = await session.get(Facilitator, facilitator_id)
    if facilitator is None or not (principal.is_agency or principal.facilitator_id == facilitator_id):
        raise NotFound(f"no facilitator {facilitator_id!r}")
    return _facilitator_out(facilitator)
