"""The filer's latest version of a lodging-period is read by one index entry (migration 0011:
the lookup once read every return its filer had filed)."""

from __future__ import annotations

import asyncpg

from filing.declarations.repository import filing_context
from taxcore.periods import Period

LODGING = (
    "INSERT INTO lodgings (jurisdiction, municipality, as_of, lodging_id, tax_account, lodging_class, "
    "casino, name, operator_id, registered_on, statuses, attributes) VALUES ('PR', 'San Juan', now(), "
    "$1, $2, 'hotel', false, 'Latest Hotel', 'op-latest', '2014-01-01', '[]', '{}')"
)
#: ``n`` returns of filer ``op-latest``, each of lodging ``prefix-i`` (its first version)
RETURNS = (
    "INSERT INTO declarations (id, filing_id, version, lodging_id, tax_account, jurisdiction, "
    "lodging_class, casino, period, filer_kind, filer_id, filed_on, due_date, late, flagged, books_kept, "
    "submitted, input, gross_receipts, exempt_total, taxable_base, rate, tax, impact_fee, total_due, "
    "findings, trace, submitted_by) "
    "SELECT $1 || i, 'f-' || $1 || i, 1, $1 || i, 'TA-' || $1 || i, 'PR', 'hotel', false, $2, "
    "'operator', 'op-latest', '2025-02-01', '2025-02-20', false, false, true, '{}', '{}', "
    "0, 0, 0, 0.09, 0, 0, 0, '[]', '[]', 'test' FROM generate_series(1, $3) AS i"
)
#: index entries of ``declarations`` read in this transaction, over all its indexes
READ = (
    "SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0) FROM pg_index "
    "WHERE indrelid = 'declarations'::regclass"
)


async def entries_read_for_the_latest(
    url: str, *, without_the_index: bool
) -> tuple[int, tuple[str, int] | None]:
    """Index entries one lookup of the latest version reads after its filer filed 3,000 other
    returns, by a connection that looked it up ten times while the table held one row; and what
    it found. On temporary ``lodgings`` and ``declarations`` (first on the search path, dropped
    with the transaction) that start empty, as a new service's do; ``without_the_index``: the
    copy without 0011's index, as before it."""
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql", 1))
    try:
        async with conn.transaction():
            for table in ("lodgings", "declarations"):
                await conn.execute(
                    f"CREATE TEMP TABLE {table} (LIKE public.{table} INCLUDING ALL) ON COMMIT DROP"
                )
            if without_the_index:
                name = await conn.fetchval(
                    "SELECT indexrelid::regclass::text FROM pg_index "
                    "WHERE indrelid = 'declarations'::regclass AND indnatts = 5"
                )
                await conn.execute(f"DROP INDEX {name}")
            await conn.execute(LODGING, "latest-lodging1", "TA-latest")
            await conn.execute(RETURNS, "latest-lodging", "2025-01", 1)  # id and lodging: latest-lodging1

            async def lookup(period: str) -> tuple[str, int] | None:
                context = await filing_context(
                    conn, ref="TA-latest", period=Period.parse(period), filer_kind="operator",
                    filer_id="op-latest", visible_to=None,
                )  # fmt: skip
                assert context is not None
                return context.latest

            for _ in range(10):  # past the five custom plans after which a generic one is tried
                assert await lookup("2025-02") is None
            await conn.execute(RETURNS, "other-", "2025-01", 3_000)
            before = await conn.fetchval(READ)
            found = await lookup("2025-01")
            return int(await conn.fetchval(READ) - before), found
    finally:
        await conn.close()


async def test_the_latest_version_is_one_index_entry_read(filing_db: str) -> None:
    assert await entries_read_for_the_latest(filing_db, without_the_index=False) == (
        1,
        ("latest-lodging1", 1),
    )


async def test_without_the_index_the_lookup_read_every_return_of_its_filer(filing_db: str) -> None:
    # the plan made on one row, by (filer_kind, filer_id): all 3,001 of the operator's entries
    assert await entries_read_for_the_latest(filing_db, without_the_index=True) == (
        3_001,
        ("latest-lodging1", 1),
    )
