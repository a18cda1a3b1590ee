"""The distribution ledger through its newest migration up, down and up again, on a populated database.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run --frozen python -u bench/check_distribution_migration.py \
        [--from 0009_derived_collection_lines] [--collections 1000]

Migrates a scratch database to ``--from``, fills it through the service as it is at that
revision would (``bench_distribution_reads``'s collections: PR and VI, negative amounts, 500
lodgings, two months; the PR July run with its stored entry and lines; one collection booked
the old way, its entry and two lines stored and ``lines_derived`` false), then upgrades to head,
downgrades to ``--from`` and upgrades again, and after each step prints and compares what the
ledger shows: every entry (id, jurisdiction, kind, day, description, event, run, reversal), every
line (entry, account, amount, rule, section, in id order within its entry), each account's total
debits and credits up to 2026-07-15 and overall (``account_totals``: the query of the tree that is
running, whose SQL reads the head schema; at ``--from`` the sums come from the views directly).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import asyncpg
from bench_distribution import post_july_run
from bench_distribution_reads import populate

from distribution.app import build_app
from distribution.settings import DistributionSettings
from servicekit.migrations import downgrade, upgrade
from servicekit.testing import database_url, running_app, test_database_name

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "services/distribution/migrations"
NAME = "roomtax_check_distribution_migration"

ENTRIES = """SELECT id, jurisdiction, kind, effective_on::text, description, event_id, run_id,
  reverses_entry_id FROM journal_entries ORDER BY id"""
LINES = """SELECT entry_id, account_code, amount::text, rule, section FROM journal_lines
  ORDER BY entry_id, CASE WHEN id < 0 THEN -id ELSE id END"""
TOTALS = """SELECT l.account_code, sum(greatest(l.amount, 0))::text, sum(greatest(-l.amount, 0))::text
  FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id {where}
 GROUP BY l.account_code ORDER BY 1"""
SHAPE = [
    "SELECT count(*) FROM journal_entries",
    "SELECT count(*) FROM journal_lines",
    "SELECT count(*) FROM collections",
    "SELECT to_regclass('stored_journal_entries')::text",
    "SELECT count(*) FILTER (WHERE lines_derived) || '/' || count(*) FROM collections",
    "SELECT count(*) FILTER (WHERE entry_derived) || '/' || count(*) FROM collections",
    "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'collections'",
]
# one collection booked as before 0009: its entry and both lines stored
OLD_WAY = """
WITH e AS (
    INSERT INTO journal_entries (jurisdiction, kind, effective_on, description, event_id)
    VALUES ('PR', 'collection', DATE '2026-07-03', 'collection booked the old way', 'old-way-event')
    RETURNING id
), l AS (
    INSERT INTO stored_journal_lines (entry_id, account_code, amount, rule, section)
    SELECT e.id, x.code, x.amount, 'collection.posted', '§28' FROM e,
        (VALUES ('cash:PR', 12.34), ('pending:PR', -12.34)) AS x(code, amount)
)
INSERT INTO collections (posting_id, event_id, payment_id, tax_account, jurisdiction, lodging_class, period,
    component, amount, collected_on, section, entry_id, lines_derived)
SELECT 'old-way', 'old-way-event', 'pay-old', 'PR-00001', 'PR', 'hotel', '2026-06', 'tax', 12.34,
    DATE '2026-07-03', '§28', e.id, false FROM e
"""


async def snapshot(url: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        shape = {}
        for q in SHAPE:
            try:
                shape[q] = await conn.fetchval(q)
            except asyncpg.PostgresError as e:
                shape[q] = type(e).__name__
        return {
            "entries": [tuple(r) for r in await conn.fetch(ENTRIES)],
            "lines": [tuple(r) for r in await conn.fetch(LINES)],
            "totals": [tuple(r) for r in await conn.fetch(TOTALS.format(where=""))],
            "totals as_of": [
                tuple(r)
                for r in await conn.fetch(TOTALS.format(where="WHERE e.effective_on <= '2026-07-15'"))
            ],
            "shape": shape,
        }
    finally:
        await conn.close()


async def service_totals(url: str) -> list[tuple[str, str, str]]:
    """``account_totals`` of this checkout (head only), overall and as of 2026-07-15."""
    from datetime import date

    from distribution.ledger.repository import account_totals

    app = build_app(DistributionSettings(environment="test", database_url=url))
    out = []
    async with running_app(app), app.state.sessionmaker() as session:
        for as_of in (None, date(2026, 7, 15)):
            for a, d, c in await account_totals(session, jurisdiction=None, as_of=as_of):
                if d or c:
                    out.append((f"{a.code}{'' if as_of is None else ' as_of'}", str(d), str(c)))
    return out


async def main(args: argparse.Namespace) -> None:
    logging.disable(logging.WARNING)
    name = test_database_name(NAME)
    conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = database_url(name)
    try:
        await asyncio.to_thread(
            upgrade, Path(args.tree) / "services/distribution/migrations", url, args.start
        )
        await fill(url, args)
        steps: dict[str, dict[str, Any]] = {args.start: await snapshot(url)}
        await asyncio.to_thread(upgrade, MIGRATIONS, url, "head")
        steps["head"] = await snapshot(url)
        head_totals = await service_totals(url)
        await asyncio.to_thread(downgrade, MIGRATIONS, url, args.start)
        steps["down"] = await snapshot(url)
        await asyncio.to_thread(upgrade, MIGRATIONS, url, "head")
        steps["head again"] = await snapshot(url)
        again_totals = await service_totals(url)
        first = steps[args.start]
        for step, got in steps.items():
            print(step, len(got["entries"]), len(got["lines"]), json.dumps(got["shape"]))
            print("   totals:", got["totals"])
            print("   totals as of 2026-07-15:", got["totals as_of"])
        for key in ("entries", "lines", "totals", "totals as_of"):
            same = all(s[key] == first[key] for s in steps.values())
            print(f"{key}: {'the same' if same else 'DIFFERENT'} at {', '.join(steps)}")
        from_views = [
            (f"{c}{suffix}", d, k)
            for key, suffix in (("totals", ""), ("totals as_of", " as_of"))
            for c, d, k in first[key]
        ]
        ok = sorted(head_totals) == sorted(from_views) == sorted(again_totals)
        print(
            f"account_totals at head (both times) {'equals' if ok else 'DIFFERS FROM'} "
            f"the sums over the views at {args.start}"
        )
    finally:
        conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def fill(url: str, args: argparse.Namespace) -> None:
    """Collections and a run through the ``--tree`` checkout's service (a child process: its
    packages, not this checkout's), plus one collection booked the old way."""
    import os
    import subprocess
    import sys

    tree = Path(args.tree)
    paths = [tree / "services/distribution", tree / "libs/servicekit", tree / "libs/taxcore"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
    await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-u", __file__, f"--fill={url}", f"--collections={args.collections}"],
        env=env,
        check=True,
    )
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    await conn.execute(OLD_WAY)
    await conn.close()


async def fill_here(url: str, count: int) -> None:
    logging.disable(logging.WARNING)
    app = build_app(DistributionSettings(environment="test", database_url=url))
    async with running_app(app) as client:
        await populate(app, count)
        await post_july_run(client)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--from", dest="start", default="0009_derived_collection_lines")
    parser.add_argument("--tree", default="/tmp/dist_before", help="a checkout at --from (git archive main)")
    parser.add_argument("--collections", type=int, default=1000)
    parser.add_argument("--fill", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.fill:
        asyncio.run(fill_here(parsed.fill, parsed.collections))
    else:
        asyncio.run(main(parsed))
