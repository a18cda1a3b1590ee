"""PostgreSQL's CPU (and the client's) for writing a schedule's events into the outbox: the
INSERT ... unnest of ``servicekit.outbox.QUEUE_CTES`` against COPY (``copy_records``).

    uv run python -u bench/outbox_write.py --database roomtax_profile_schedule_after_me [--rounds 4]

Reads the newest ``--rows`` outbox rows of ``--database`` (one that ``profile_schedule.py``
filled: one ``declaration.filed`` event per row, ~1.5 kB envelopes), then, round by round and
variant by variant (alternately, so both see the same load), writes them in chunks of
``filing.schedules.service.CHUNK_ROWS`` into a fresh table ``LIKE outbox INCLUDING ALL`` (its
four indexes, identity and defaults; logged, so the WAL is written as the outbox's), in one
transaction that commits, and reads the backend's CPU (``/proc/<pid>/stat``) and this
process's CPU (``time.process_time``: asyncpg encoding the arrays or the COPY records) around
the writes only. Prints the medians in us per row.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

import asyncpg

from servicekit import outbox

TABLE = "outbox_write"
COLUMNS = list(outbox.RECORD_COLUMNS)
CHUNK = 2_000


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _insert_sql() -> str:
    sql = outbox.QUEUE_CTES.replace("INSERT INTO outbox ", f"INSERT INTO {TABLE} ") + "SELECT 1"
    for i, name in enumerate(("c", "e", "t", "k", "y", "p", "tp"), start=1):
        sql = sql.replace(f":{name} ", f"${i} ").replace(f":{name})", f"${i})").replace(f":{name},", f"${i},")
    return sql


async def insert(conn: asyncpg.Connection, chunk: list[tuple[Any, ...]]) -> None:
    await conn.execute(_insert_sql(), outbox.CHANNEL, *(list(col) for col in zip(*chunk, strict=True)))


async def copy(conn: asyncpg.Connection, chunk: list[tuple[Any, ...]]) -> None:
    await conn.copy_records_to_table(TABLE, columns=COLUMNS, records=chunk)
    await conn.execute(f"SELECT pg_notify('{outbox.CHANNEL}', '')")


VARIANTS = {"INSERT ... unnest (before)": insert, "COPY (after)": copy}


async def main(args: argparse.Namespace) -> None:
    conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:5432/{args.database}")
    try:
        pid = conn.get_server_pid()
        rows = await conn.fetch(
            "SELECT event_id, topic, key, event_type, payload::text, traceparent FROM outbox "
            "ORDER BY id DESC LIMIT $1",
            args.rows,
        )
        records = [tuple(r) for r in reversed(rows)]
        n = len(records)
        print(f"{n} rows, payload {sum(len(r[4]) for r in records) / n:.0f} bytes on average", flush=True)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
        for rnd in range(args.rounds):
            for name, write in VARIANTS.items():
                await conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
                await conn.execute(f"CREATE TABLE {TABLE} (LIKE outbox INCLUDING ALL)")
                await conn.execute("CHECKPOINT")
                pg0, cpu0 = backend_cpu(pid), time.process_time()
                async with conn.transaction():
                    for start in range(0, n, CHUNK):
                        await write(conn, records[start : start + CHUNK])
                pg, cpu = backend_cpu(pid) - pg0, time.process_time() - cpu0
                figures[name].append((pg, cpu))
                print(
                    f"round {rnd + 1} {name:28}: PostgreSQL {pg * 1e6 / n:6.1f} us/row, "
                    f"client {cpu * 1e6 / n:5.1f} us/row",
                    flush=True,
                )
        await conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    finally:
        await conn.close()
    base = statistics.median(pg for pg, _ in figures["INSERT ... unnest (before)"])
    print()
    print("| write | PostgreSQL CPU us/row | ratio | client CPU us/row |")
    print("|---|---|---|---|")
    for name, values in figures.items():
        pg = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"| {name} | {pg * 1e6 / n:.1f} | {pg / base:.2f} | {cpu * 1e6 / n:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", required=True)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
