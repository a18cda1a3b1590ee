"""The queries behind the agency's work queues: case work still waiting for someone."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date

from sqlalchemy import exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.casework.models import Case, CaseStep, RefundStep
from assessment.models import Refund

#: a queue shows at most this many rows (oldest first); the rest follow as they clear
QUEUE_LIMIT = 500

#: a refund with one of these steps is finished (each step at most once: uq_refund_steps_final)
REFUND_DONE = ("paid", "denied")


async def cases_by_age(session: AsyncSession, *, on: date, last_step_not_in: Collection[str]) -> list[Case]:
    """The oldest cases whose latest step by ``on`` (none: filed) is not one of
    ``last_step_not_in``: a finished case is left out in the query, so the cases finished long
    ago do not fill the queue's limit and hide the newer open ones."""
    last = (
        select(CaseStep.step)
        .where(CaseStep.case_id == Case.id, CaseStep.on <= on)
        .order_by(CaseStep.seq.desc())
        .limit(1)
        .scalar_subquery()
    )
    stmt = select(Case).order_by(Case.opened_on, Case.id).limit(QUEUE_LIMIT * 2)
    if last_step_not_in:
        stmt = stmt.where(func.coalesce(last, "filed").not_in(list(last_step_not_in)))
    return list((await session.execute(stmt)).scalars().all())


async def refunds_by_age(session: AsyncSession) -> list[Refund]:
    """The oldest refunds neither paid nor denied (left out in the query, as finished cases are)."""
    done = exists().where(RefundStep.refund_id == Refund.id, RefundStep.step.in_(REFUND_DONE))
    stmt = select(Refund).where(~done).order_by(Refund.requested_on, Refund.id).limit(QUEUE_LIMIT * 2)
    return list((await session.execute(stmt)).scalars().all())
