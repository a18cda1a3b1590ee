"""The queries behind the agency's work queues: case work still waiting for someone."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.casework.models import Case
from assessment.models import Refund

#: a queue shows at most this many rows (oldest first); the rest follow as they clear
QUEUE_LIMIT = 500


async def cases_by_age(session: AsyncSession) -> list[Case]:
    stmt = select(Case).order_by(Case.opened_on, Case.id).limit(QUEUE_LIMIT * 2)
    return list((await session.execute(stmt)).scalars().all())


async def refunds_by_age(session: AsyncSession) -> list[Refund]:
    stmt = select(Refund).order_by(Refund.requested_on, Refund.id).limit(QUEUE_LIMIT * 2)
    return list((await session.execute(stmt)).scalars().all())
