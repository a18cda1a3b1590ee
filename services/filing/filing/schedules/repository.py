"""Queries over remittance schedules."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from filing.models import RemittanceSchedule


async def list_page(
    session: AsyncSession,
    *,
    facilitator_id: str | None,
    period: str | None,
    before: int | None,
    limit: int,
) -> Sequence[RemittanceSchedule]:
    """Newest first, ``limit + 1`` rows (the extra one says there is a next page).

    The per-row results (a JSONB document as long as the schedule) are not loaded."""
    q = select(RemittanceSchedule).order_by(RemittanceSchedule.seq.desc()).limit(limit + 1)
    q = q.options(defer(RemittanceSchedule.results))
    if facilitator_id is not None:
        q = q.where(RemittanceSchedule.facilitator_id == facilitator_id)
    if period is not None:
        q = q.where(RemittanceSchedule.period == period)
    if before is not None:
        q = q.where(RemittanceSchedule.seq < before)
    return (await session.scalars(q)).all()
