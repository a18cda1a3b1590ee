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


async def get(session: AsyncSession, model: type[V], row_id: str) -> V | None:
    return await session.get(model, row_id)


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
) -> Sequence[V]:
    """Rows by ``group`` then version (only ``value``'s when set), one page past ``after``."""
    stmt = select(model).order_by(group, model.version).limit(limit + 1)
    if value is not None:
        stmt = stmt.where(group == value)
    if after is not None:
        last, version = after
        stmt = stmt.where((group > last) | ((group == last) & (model.version > version)))
    return (await session.execute(stmt)).scalars().all()


async def current_ids(session: AsyncSession, model: type[V]) -> set[str]:
    """Ids of the rows no correction supersedes."""
    superseded = select(model.supersedes_id).where(model.supersedes_id.is_not(None))
    rows = await session.execute(select(model.id).where(model.id.not_in(superseded)))
    return set(rows.scalars())
