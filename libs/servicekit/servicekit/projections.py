"""Projections of another service's aggregates: the latest snapshot wins.

A service keeps a local copy of what another publishes as full snapshots (the registry's
lodgings, bonds, authorizations, party names). Events of one key arrive in order, but a
replay or a second consumer can deliver an older snapshot after a newer one, so a row is
written only when the event is not older than what is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase


async def upsert_latest(
    session: AsyncSession,
    model: type[DeclarativeBase],
    values: Mapping[str, Any],
    *,
    key: Sequence[str],
    as_of: str,
) -> bool:
    """Insert the row, or update it unless the stored one is newer (by the ``as_of`` column).

    One statement (``INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE stored.as_of <=
    new.as_of``), which locks the row like ``SELECT ... FOR UPDATE`` would. ``values``
    holds every column to write, the key included. Returns whether the row was written
    (False: an older snapshot, ignored).
    """
    table = model.__table__
    stmt = insert(model).values(**values)
    upsert = stmt.on_conflict_do_update(
        index_elements=[table.c[k] for k in key],
        set_={k: stmt.excluded[k] for k in values if k not in key},
        where=table.c[as_of] <= stmt.excluded[as_of],
    ).returning(table.c[key[0]])
    return (await session.execute(upsert)).first() is not None
