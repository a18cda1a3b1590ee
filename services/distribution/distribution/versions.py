"""Records corrected by a new version, never edited: the Bank's certifications (PR §31(A)) and the
opening states. The queries both need, written once.

A correction is a row with the next ``version`` whose ``supersedes_id`` names the row it
corrects; the current rows are those no row supersedes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from distribution.models import Certification, OpeningState

V = TypeVar("V", Certification, OpeningState)


async def get(session: AsyncSession, model: type[V], row_id: str) -> tuple[V, bool] | None:
    """The row and whether it is current."""
    row = await session.get(model, row_id)
    if row is None:
        return None
    return row, row.id not in await superseded(session, model, [row.id])


async def latest(session: AsyncSession, model: type[V], *where: ColumnElement[bool]) -> V | None:
    """The highest version among the rows matching ``where``."""
    stmt = select(model).where(*where).order_by(model.version.desc()).limit(1)
    return (await session.execute(stmt)).scalar_one_or_none()


async def page(
    session: AsyncSession,
    model: type[V],
    group: InstrumentedAttribute[Any],
    *,
    value: object | None,
    after: tuple[Any, int] | None,
    limit: int,
) -> list[tuple[V, bool]]:
    """Rows by ``group`` then version (only ``value``'s when set), one page past ``after``, each
    with whether it is current."""
    stmt = select(model).order_by(group, model.version).limit(limit + 1)
    if value is not None:
        stmt = stmt.where(group == value)
    if after is not None:
        last, version = after
        stmt = stmt.where((group > last) | ((group == last) & (model.version > version)))
    rows = (await session.execute(stmt)).scalars().all()
    gone = await superseded(session, model, [r.id for r in rows])
    return [(r, r.id not in gone) for r in rows]


async def superseded(session: AsyncSession, model: type[V], ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` that a correction supersedes."""
    if not ids:
        return set()
    rows = await session.execute(select(model.supersedes_id).where(model.supersedes_id.in_(ids)))
    return {i for i in rows.scalars() if i is not None}
