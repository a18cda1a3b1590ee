"""Queries of the operators and facilitators domain."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import Facilitator, Operator
from servicekit.auth import Principal


async def operators_page(
    session: AsyncSession, principal: Principal, *, limit: int, after: list[str] | None
) -> Sequence[Operator]:
    """Operators the caller may see (agency: all; otherwise its own), one page past ``after``."""
    stmt = select(Operator).order_by(Operator.id).limit(limit + 1)
    if not principal.is_agency:
        stmt = stmt.where(Operator.id == (principal.operator_id or ""))
    if after:
        stmt = stmt.where(Operator.id > after[0])
    return (await session.execute(stmt)).scalars().all()


async def facilitators_page(
    session: AsyncSession, principal: Principal, *, limit: int, after: list[str] | None
) -> Sequence[Facilitator]:
    """Facilitators the caller may see (agency: all; otherwise itself), one page past ``after``."""
    stmt = select(Facilitator).order_by(Facilitator.id).limit(limit + 1)
    if not principal.is_agency:
        stmt = stmt.where(Facilitator.id == (principal.facilitator_id or ""))
    if after:
        stmt = stmt.where(Facilitator.id > after[0])
    return (await session.execute(stmt)).scalars().all()


async def operator(session: AsyncSession, operator_id: str) -> Operator | None:
    return await session.get(Operator, operator_id)


async def facilitator(session: AsyncSession, facilitator_id: str) -> Facilitator | None:
    return await session.get(Facilitator, facilitator_id)
