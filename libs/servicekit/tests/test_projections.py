"""The latest snapshot wins: servicekit.projections.upsert_latest on the real database."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import DateTime, Text, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from servicekit.db import make_engine, make_sessionmaker
from servicekit.projections import upsert_latest

SM = async_sessionmaker[AsyncSession]
T0, T1, T2 = (datetime(2026, 11, 30, h, tzinfo=UTC) for h in (9, 10, 11))


class Base(DeclarativeBase):
    pass


class Snapshot(Base):
    """A projected row keyed by two columns, as filing's party names are."""

    __tablename__ = f"projection_test_{uuid.uuid4().hex[:8]}"
    kind: Mapped[str] = mapped_column(Text, primary_key=True)
    party_id: Mapped[str] = mapped_column(Text, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))


@pytest.fixture(scope="module")
async def sm(chassis_db: str) -> AsyncIterator[SM]:
    engine = make_engine(chassis_db, application_name="projection-test", pool_size=2)
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    yield make_sessionmaker(engine, service="chassis")
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.drop_all)
    await engine.dispose()


async def put(sm: SM, party_id: str, name: str, as_of: datetime) -> bool:
    values = {"kind": "operator", "party_id": party_id, "name": name, "as_of": as_of}
    async with sm() as session, session.begin():
        return await upsert_latest(session, Snapshot, values, key=["kind", "party_id"], as_of="as_of")


async def stored(sm: SM, party_id: str) -> tuple[str, datetime]:
    async with sm() as session:
        row = (await session.execute(select(Snapshot).where(Snapshot.party_id == party_id))).scalar_one()
        return row.name, row.as_of


class TestUpsertLatest:
    async def test_a_new_key_is_inserted(self, sm: SM) -> None:
        assert await put(sm, "op-new", "Casita", T1) is True
        assert await stored(sm, "op-new") == ("Casita", T1)

    async def test_a_newer_snapshot_replaces_the_row(self, sm: SM) -> None:
        await put(sm, "op-newer", "Casita", T1)
        assert await put(sm, "op-newer", "Casita del Mar", T2) is True
        assert await stored(sm, "op-newer") == ("Casita del Mar", T2)

    async def test_an_older_snapshot_delivered_late_changes_nothing(self, sm: SM) -> None:
        await put(sm, "op-late", "Casita del Mar", T2)
        assert await put(sm, "op-late", "Casita", T0) is False
        assert await stored(sm, "op-late") == ("Casita del Mar", T2)

    async def test_a_snapshot_of_the_same_time_is_applied_again(self, sm: SM) -> None:
        await put(sm, "op-same", "Casita", T1)
        assert await put(sm, "op-same", "Casita", T1) is True
        assert await stored(sm, "op-same") == ("Casita", T1)
