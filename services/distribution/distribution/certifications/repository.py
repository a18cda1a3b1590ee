from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from distribution import versions
from distribution.models import Certification


async def get(session: AsyncSession, certification_id: str) -> tuple[Certification, bool] | None:
    """The certification and whether it is current."""
    return await versions.get(session, Certification, certification_id)


async def current(session: AsyncSession, jurisdiction: str, fiscal_year: int) -> Certification | None:
    where = (Certification.jurisdiction == jurisdiction, Certification.fiscal_year == fiscal_year)
    return await versions.latest(session, Certification, *where)


async def list_page(
    session: AsyncSession, *, fiscal_year: int | None, after: tuple[int, int] | None, limit: int
) -> list[tuple[Certification, bool]]:
    group = Certification.fiscal_year
    return await versions.page(session, Certification, group, value=fiscal_year, after=after, limit=limit)
