"""PostgreSQL's CPU for COPYing a schedule's declarations under different storage settings.

    uv run python -u bench/copy_storage.py --database roomtax_profile_schedule_after_me [--rounds 4]

Reads every declaration of ``--database`` (one that ``profile_schedule.py`` filled: 10,000 rows
per round) in COPY's binary format, then, round by round, COPYs them into a fresh table
``LIKE declarations INCLUDING ALL`` (its indexes, defaults and the column's compression) with
each variant's settings applied, and reads the backend's CPU (``/proc/<pid>/stat``) around the
COPY only. A real (logged) table, so the WAL is written as a schedule's COPY writes it; the
table is dropped after each COPY. Prints us of backend CPU per row and the table's size.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
from pathlib import Path

import asyncpg

VARIANTS: dict[str, list[str]] = {
    "pglz (the server's default)": ["ALTER TABLE copy_storage ALTER COLUMN trace SET COMPRESSION pglz"],
    "lz4 trace": ["ALTER TABLE copy_storage ALTER COLUMN trace SET COMPRESSION lz4"],
    "lz4 trace, toast_tuple_target 8160": [
        "ALTER TABLE copy_storage ALTER COLUMN trace SET COMPRESSION lz4",
        "ALTER TABLE copy_storage SET (toast_tuple_target = 8160)",
    ],
}


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def main(args: argparse.Namespace) -> None:
    conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:5432/{args.database}")
    try:
        pid = conn.get_server_pid()
        columns = [
            r[0]
            for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'declarations' "
                "AND column_name NOT IN ('seq', 'created_at') ORDER BY ordinal_position"
            )
        ]
        out = io.BytesIO()
        await conn.copy_from_query(
            f"SELECT {', '.join(columns)} FROM declarations", output=out, format="binary"
        )
        data = out.getvalue()
        n = await conn.fetchval("SELECT count(*) FROM declarations")
        print(f"{n} declarations, load {os.getloadavg()[0]:.1f}", flush=True)
        for k in range(args.rounds):
            for name, statements in VARIANTS.items():
                await conn.execute("DROP TABLE IF EXISTS copy_storage")
                await conn.execute("CREATE TABLE copy_storage (LIKE declarations INCLUDING ALL)")
                for statement in statements:
                    await conn.execute(statement)
                cpu0 = backend_cpu(pid)
                await conn.copy_to_table(
                    "copy_storage", source=io.BytesIO(data), columns=columns, format="binary"
                )
                cpu = backend_cpu(pid) - cpu0
                size = await conn.fetchval("SELECT pg_total_relation_size('copy_storage')")
                print(
                    f"round {k + 1} {name:36} {cpu * 1e6 / n:6.1f} us/row, {size / 1e6:5.0f} MB", flush=True
                )
        await conn.execute("DROP TABLE IF EXISTS copy_storage")
    finally:
        await conn.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", required=True)
    parser.add_argument("--rounds", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
