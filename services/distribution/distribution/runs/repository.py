"""Every query of the runs domain."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import load_only

from distribution.models import Collection, JournalEntry, Run, RunCollection


async def lock_jurisdiction(session: AsyncSession, jurisdiction: str) -> None:
    """Serialize runs of one jurisdiction (two concurrent POSTs of a month post one run)."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('distribution-run'), hashtext(:j))"), {"j": jurisdiction}
    )


async def by_month(session: AsyncSession, jurisdiction: str, month: str) -> Run | None:
    stmt = select(Run).where(Run.jurisdiction == jurisdiction, Run.month == month)
    return (await session.execute(stmt)).scalar_one_or_none()


async def latest(session: AsyncSession, jurisdiction: str) -> Run | None:
    stmt = select(Run).where(Run.jurisdiction == jurisdiction).order_by(Run.month.desc()).limit(1)
    return (await session.execute(stmt)).scalar_one_or_none()


async def undistributed(session: AsyncSession, jurisdiction: str, through: date) -> Sequence[Collection]:
    """Collections of ``jurisdiction`` collected on or before ``through`` that no run distributed
    yet, with only what a run reads of them (a month's run loads every such row: the rows'
    descriptions and citations are most of their bytes; any other attribute raises)."""
    taken = select(RunCollection.collection_id).where(RunCollection.collection_id == Collection.id)
    c = Collection
    stmt = (
        select(Collection)
        .options(load_only(c.id, c.jurisdiction, c.component, c.collected_on, c.amount, raiseload=True))
        .where(Collection.jurisdiction == jurisdiction, Collection.collected_on <= through, ~taken.exists())
        .order_by(Collection.id)
    )
    return (await session.execute(stmt)).scalars().all()


async def list_page(
    session: AsyncSession,
    *,
    jurisdiction: str | None,
    fiscal_year: int | None,
    after: tuple[str, str] | None,
    limit: int,
) -> Sequence[Run]:
    stmt = select(Run).order_by(Run.jurisdiction, Run.month).limit(limit + 1)
    if jurisdiction is not None:
        stmt = stmt.where(Run.jurisdiction == jurisdiction)
    if fiscal_year is not None:
        stmt = stmt.where(Run.fiscal_year == fiscal_year)
    if after is not None:
        j, m = after
        stmt = stmt.where((Run.jurisdiction > j) | ((Run.jurisdiction == j) & (Run.month > m)))
    return (await session.execute(stmt)).scalars().all()


async def runs_of_year(session: AsyncSession, jurisdiction: str, fiscal_year: int) -> Sequence[Run]:
    stmt = (
        select(Run)
        .where(Run.jurisdiction == jurisdiction, Run.fiscal_year == fiscal_year)
        .order_by(Run.month)
    )
    return (await session.execute(stmt)).scalars().all()


async def collection_count(session: AsyncSession, run_id: str) -> int:
    rows = await session.execute(select(RunCollection.collection_id).where(RunCollection.run_id == run_id))
    return len(rows.all())


async def earliest(session: AsyncSession, jurisdiction: str) -> Run | None:
    stmt = select(Run).where(Run.jurisdiction == jurisdiction).order_by(Run.month).limit(1)
    return (await session.execute(stmt)).scalar_one_or_none()


async def journal_entry_id(session: AsyncSession, run_id: str) -> int | None:
    """The journal entry a posted run wrote (None for a run not posted)."""
    row = await session.execute(select(JournalEntry.id).where(JournalEntry.run_id == run_id))
    return row.scalar_one_or_none()
