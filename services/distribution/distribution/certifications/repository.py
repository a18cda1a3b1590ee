from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from distribution.models import Certification


async def current(session: AsyncSession, jurisdiction: str, fiscal_year: int) -> Certification | None:
    stmt = (
        select(Certification)
        .where(Certification.jurisdiction == jurisdiction, Certification.fiscal_year == fiscal_year)
        .order_by(Certification.version.desc())
        .limit(1)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_page(
    session: AsyncSession, *, fiscal_year: int | None, after: tuple[int, int] | None, limit: int
) -> Sequence[Certification]:
    stmt = select(Certification).order_by(Certification.fiscal_year, Certification.version).limit(limit + 1)
    if fiscal_year is not None:
        stmt = stmt.where(Certification.fiscal_year == fiscal_year)
    if after is not None:
        fy, version = after
        stmt = stmt.where(
            (Certification.fiscal_year > fy)
            | ((Certification.fiscal_year == fy) & (Certification.version > version))
        )
    return (await session.execute(stmt)).scalars().all()


async def current_ids(session: AsyncSession) -> set[str]:
    superseded = select(Certification.supersedes_id).where(Certification.supersedes_id.is_not(None))
    rows = await session.execute(select(Certification.id).where(Certification.id.not_in(superseded)))
    return set(rows.scalars())
