"""A declaration's trace and a schedule's results are compressed with lz4 (migration 0010:
pglz cost ~8-10 us of PostgreSQL per declaration a schedule writes, issue 12), and the
migration goes down and up again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
from filing_factories import DB
from sqlalchemy import text

from servicekit.migrations import downgrade, upgrade
from servicekit.testing import fresh_database

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
_COMPRESSION = (
    "SELECT c.relname || '.' || a.attname, CAST(a.attcompression AS text) FROM pg_attribute a "
    "JOIN pg_class c ON c.oid = a.attrelid "
    "WHERE (c.relname, a.attname) IN (('declarations', 'trace'), ('remittance_schedules', 'results'))"
)


async def _compression(url: str) -> dict[str, str]:
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return {name: method for name, method in await conn.fetch(_COMPRESSION)}
    finally:
        await conn.close()


class TestDocumentCompression:
    async def test_trace_and_results_are_lz4(self, db: DB) -> None:
        async with db() as session:
            found = {name: method for name, method in (await session.execute(text(_COMPRESSION))).all()}
        assert found == {"declarations.trace": "l", "remittance_schedules.results": "l"}

    async def test_down_and_up(self) -> None:
        url = await fresh_database("roomtax_test_filing_0010", MIGRATIONS)
        try:
            assert await _compression(url) == {"declarations.trace": "l", "remittance_schedules.results": "l"}
            await asyncio.to_thread(downgrade, MIGRATIONS, url, "0009_auth_lodging_facilitator")
            # "": the column's default, the server's default_toast_compression (pglz)
            assert await _compression(url) == {"declarations.trace": "", "remittance_schedules.results": ""}
            await asyncio.to_thread(upgrade, MIGRATIONS, url)
            assert await _compression(url) == {"declarations.trace": "l", "remittance_schedules.results": "l"}
        finally:
            conn = await asyncpg.connect(url.rsplit("/", 1)[0].replace("+asyncpg", "") + "/postgres")
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
            finally:
                await conn.close()
