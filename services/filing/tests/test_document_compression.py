"""A declaration's trace and a schedule's results are compressed with lz4 (migration 0010:
pglz cost ~8-10 us of PostgreSQL per declaration a schedule writes, issue 12) where the server
has lz4, the default where it was built without (the embedded pgserver), and the migration
goes down and up again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
from filing_factories import DB
from sqlalchemy import text

from servicekit.migrations import downgrade, upgrade
from servicekit.testing import database_url, fresh_database
from servicekit.testing import test_database_name as suffixed

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
NAME = "roomtax_test_filing_0010"
_COMPRESSION = (
    "SELECT c.relname || '.' || a.attname, CAST(a.attcompression AS text) FROM pg_attribute a "
    "JOIN pg_class c ON c.oid = a.attrelid "
    "WHERE (c.relname, a.attname) IN (('declarations', 'trace'), ('remittance_schedules', 'results'))"
)
#: whether the server was built with lz4: the setting's values name it only then
HAS_LZ4 = "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"


#: "l": lz4; "": the column's default, the server's default_toast_compression (pglz)
DEFAULT = {"declarations.trace": "", "remittance_schedules.results": ""}
LZ4 = {"declarations.trace": "l", "remittance_schedules.results": "l"}


async def _compression(url: str) -> tuple[dict[str, str], bool]:
    """Each column's method, and whether the server was built with lz4."""
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql", 1))
    try:
        found = {name: method for name, method in await conn.fetch(_COMPRESSION)}
        return found, bool(await conn.fetchval(HAS_LZ4))
    finally:
        await conn.close()


class TestDocumentCompression:
    async def test_trace_and_results_are_lz4(self, db: DB) -> None:
        async with db() as session:
            found = {name: method for name, method in (await session.execute(text(_COMPRESSION))).all()}
            has_lz4 = (await session.execute(text(HAS_LZ4))).scalar()
        assert found == (LZ4 if has_lz4 else DEFAULT)

    async def test_down_and_up(self) -> None:
        url = await fresh_database(NAME, MIGRATIONS)
        try:
            found, has_lz4 = await _compression(url)
            upgraded = LZ4 if has_lz4 else DEFAULT
            assert found == upgraded
            await asyncio.to_thread(downgrade, MIGRATIONS, url, "0009_auth_lodging_facilitator")
            assert (await _compression(url))[0] == DEFAULT
            await asyncio.to_thread(upgrade, MIGRATIONS, url)
            assert (await _compression(url))[0] == upgraded
        finally:
            conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{suffixed(NAME)}" WITH (FORCE)')
            finally:
                await conn.close()
