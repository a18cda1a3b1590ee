"""Queries of authorizations (a facilitator may file and remit for a lodging)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import Authorization

FAR_FUTURE = date(9999, 12, 31)


async def overlapping(
    session: AsyncSession,
    lodging_id: str,
    facilitator_id: str,
    starts: date,
    ends: date | None,
    exclude: str | None = None,
) -> Authorization | None:
    stmt = select(Authorization).where(
        Authorization.lodging_id == lodging_id,
        Authorization.facilitator_id == facilitator_id,
        or_(Authorization.ends_on.is_(None), Authorization.ends_on >= starts),
        Authorization.starts_on <= (ends or FAR_FUTURE),
    )
    if exclude:
        stmt = stmt.where(and_(Authorization.id != exclude))
    return (await session.execute(stmt)).scalars().first()


async def of_lodging(
    session: AsyncSession, lodging_id: str, *, facilitator_id: str | None = None
) -> Sequence[Authorization]:
    """The lodging's authorizations by start date; only one facilitator's when ``facilitator_id`` is set."""
    stmt = (
        select(Authorization)
        .where(Authorization.lodging_id == lodging_id)
        .order_by(Authorization.starts_on, Authorization.id)
    )
    if facilitator_id is not None:
        stmt = stmt.where(Authorization.facilitator_id == facilitator_id)
    return (await session.execute(stmt)).scalars().all()


async def authorization(session: AsyncSession, authorization_id: str) -> Authorization | None:
    return await session.get(Authorization, authorization_id)
