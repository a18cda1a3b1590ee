"""Operator and facilitator use-cases: registration (with its event) and visible reads."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import Facilitator, Operator
from registry.parties import repository
from registry.parties.schemas import FacilitatorCreate, PartyCreate
from servicekit.auth import Principal
from servicekit.errors import NotFound, ValidationFailed
from servicekit.outbox import emit
from taxcore.events import registry as ev


async def register_operator(session: AsyncSession, *, body: PartyCreate) -> Operator:
    operator = Operator(name=body.name, email=body.email, tax_id=body.tax_id)
    session.add(operator)
    await session.flush()
    await session.refresh(operator)
    await emit(
        session,
        ev.OperatorRegistered(operator_id=operator.id, name=operator.name, email=operator.email),
        key=operator.id,
    )
    return operator


async def register_facilitator(session: AsyncSession, *, body: FacilitatorCreate) -> Facilitator:
    if body.operator_id is not None and await repository.operator(session, body.operator_id) is None:
        raise ValidationFailed.on("operator_id", "no operator with this id")
    facilitator = Facilitator(name=body.name, email=body.email, operator_id=body.operator_id)
    session.add(facilitator)
    await session.flush()
    await session.refresh(facilitator)
    await emit(
        session,
        ev.FacilitatorRegistered(
            facilitator_id=facilitator.id, name=facilitator.name, email=facilitator.email
        ),
        key=facilitator.id,
    )
    return facilitator


async def visible_operator(session: AsyncSession, *, principal: Principal, operator_id: str) -> Operator:
    """The operator, if the caller is the agency or that operator; otherwise NotFound."""
    operator = await repository.operator(session, operator_id)
    if operator is None or not (principal.is_agency or principal.operator_id == operator_id):
        raise NotFound(f"no operator {operator_id!r}")
    return operator


async def visible_facilitator(
    session: AsyncSession, *, principal: Principal, facilitator_id: str
) -> Facilitator:
    """The facilitator, if the caller is the agency or that facilitator; otherwise NotFound."""
    facilitator = await repository.facilitator(session, facilitator_id)
    if facilitator is None or not (principal.is_agency or principal.facilitator_id == facilitator_id):
        raise NotFound(f"no facilitator {facilitator_id!r}")
    return facilitator
