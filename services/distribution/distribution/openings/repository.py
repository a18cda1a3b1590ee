"""Every query of the opening states."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from distribution.models import OpeningState


async def lock(session: AsyncSession, jurisdiction: str) -> None:
    """Serialize with the jurisdiction's runs (the same lock): a run never reads a half-declared state."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('distribution-run'), hashtext(:j))"), {"j": jurisdiction}
    )


async def current(session: AsyncSession, jurisdiction: str) -> OpeningState | None:
    stmt = (
        select(OpeningState)
        .where(OpeningState.jurisdiction == jurisdiction)
        .order_by(OpeningState.version.desc())
        .limit(1)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_page(
    session: AsyncSession, *, jurisdiction: str | None, after: tuple[str, int] | None, limit: int
) -> Sequence[OpeningState]:
    stmt = select(OpeningState).order_by(OpeningState.jurisdiction, OpeningState.version).limit(limit + 1)
    if jurisdiction is not None:
        stmt = stmt.where(OpeningState.jurisdiction == jurisdiction)
    if after is not None:
        j, version = after
        stmt = stmt.where(
            (OpeningState.jurisdiction > j)
            | ((OpeningState.jurisdiction == j) & (OpeningState.version > version))
        )
    return (await session.execute(stmt)).scalars().all()


async def current_ids(session: AsyncSession) -> set[str]:
    superseded = select(OpeningState.supersedes_id).where(OpeningState.supersedes_id.is_not(None))
    rows = await session.execute(select(OpeningState.id).where(OpeningState.id.not_in(superseded)))
    return set(rows.scalars())
