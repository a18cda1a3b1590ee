"""Every query of the opening states."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from distribution import versions
from distribution.models import OpeningState


async def lock(session: AsyncSession, jurisdiction: str) -> None:
    """Serialize with the jurisdiction's runs (the same lock): a run never reads a half-declared state."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('distribution-run'), hashtext(:j))"), {"j": jurisdiction}
    )


async def get(session: AsyncSession, opening_state_id: str) -> tuple[OpeningState, bool] | None:
    """The opening state and whether it is current."""
    return await versions.get(session, OpeningState, opening_state_id)


async def current(session: AsyncSession, jurisdiction: str) -> OpeningState | None:
    return await versions.latest(session, OpeningState, OpeningState.jurisdiction == jurisdiction)


async def list_page(
    session: AsyncSession, *, jurisdiction: str | None, after: tuple[str, int] | None, limit: int
) -> list[tuple[OpeningState, bool]]:
    group = OpeningState.jurisdiction
    return await versions.page(session, OpeningState, group, value=jurisdiction, after=after, limit=limit)
