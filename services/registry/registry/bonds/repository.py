"""Queries of bonds (PR §27) and draws on them (PR §33)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import Bond, BondDraw


async def active_overlapping(session: AsyncSession, lodging_id: str, start: date, end: date) -> Bond | None:
    """An active bond of the lodging in force on some day of ``start``..``end`` (one day: valid on it)."""
    stmt = select(Bond).where(
        Bond.lodging_id == lodging_id,
        Bond.status == "active",
        Bond.effective_on <= end,
        Bond.expires_on >= start,
    )
    return (await session.execute(stmt)).scalars().first()


async def of_lodging(session: AsyncSession, lodging_id: str) -> Sequence[Bond]:
    stmt = select(Bond).where(Bond.lodging_id == lodging_id).order_by(Bond.effective_on, Bond.id)
    return (await session.execute(stmt)).scalars().all()


async def bond(session: AsyncSession, bond_id: str) -> Bond | None:
    return await session.get(Bond, bond_id)


async def draw_requested(session: AsyncSession, request_event_id: str) -> bool:
    """Whether a draw was already recorded for this request event."""
    stmt = select(BondDraw.id).where(BondDraw.request_event_id == request_event_id)
    return (await session.execute(stmt)).first() is not None
