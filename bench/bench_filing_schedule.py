"""Benchmark: a 10,000-row remittance schedule, through the ASGI app, against real PostgreSQL.

    uv run python bench/bench_filing_schedule.py [rows]

Builds a fresh database (``roomtax_bench_filing``, alembic upgrade head), seeds the
registry projection with one lodging per row, all authorizing one facilitator, then
POSTs one JSON schedule (and the same document as CSV, which amends every row).
Baselines measured in the same run:

* one single-row ``POST /v1/declarations`` (mean of 50) x rows: what filing the rows
  one request at a time would cost;
* a raw ``INSERT ... SELECT`` of the same number of declaration rows: the floor
  the database itself sets for writing them.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import asyncpg
from filing_seed import seed_lodgings

from filing.app import build_app
from filing.settings import FilingSettings
from servicekit.testing import auth, fresh_database, running_app

MIGRATIONS = Path(__file__).resolve().parent.parent / "services" / "filing" / "migrations"
PERIOD = "2026-10"


async def seed(dsn: str, n: int, facilitator: str, operator: str) -> list[str]:
    accounts = [f"PR-{i:07d}-0" for i in range(1, n + 1)]
    now = datetime.now(UTC)
    conn = await asyncpg.connect(dsn)
    try:
        await seed_lodgings(conn, accounts, operator=operator, registered_on=date(2026, 1, 1))
        await conn.copy_records_to_table(
            "authorizations",
            columns=["authorization_id", "lodging_id", "tax_account", "facilitator_id", "starts_on", "as_of"],
            records=[
                (str(uuid.uuid4()), f"lodging-{i}", acct, facilitator, date(2026, 1, 1), now)
                for i, acct in enumerate(accounts)
            ],
        )
    finally:
        await conn.close()
    return accounts


def row(i: int, account: str) -> dict[str, object]:
    revenue = 1000 + i % 997
    return {
        "tax_account": account,
        "room_revenue": f"{revenue}.00",
        "resort_and_other_fees": "25.00",
        "intermediary_retained": "150.00",
        "room_nights": 5,
        "declared_tax": f"{(revenue + 25) * 9 / 100:.2f}",
    }


async def main(n: int) -> None:
    url = await fresh_database("roomtax_bench_filing", MIGRATIONS)
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    facilitator, operator = "fac-bench", "op-bench"
    accounts = await seed(dsn, n, facilitator, operator)
    rows = [row(i, a) for i, a in enumerate(accounts)]
    app = build_app(FilingSettings(environment="test", database_url=url))
    as_fac, as_op = auth("facilitator", facilitator_id=facilitator), auth("operator", operator_id=operator)
    async with running_app(app) as client:
        single: list[float] = []
        for i in range(55):
            body = {
                "lodging": accounts[i],
                "period": PERIOD,
                "room_revenue": "1000.00",
                "room_nights": 5,
                "declared": {"tax": "90.00"},
            }
            t0 = time.perf_counter()
            r = await client.post("/v1/declarations", json=body, headers=as_op)
            elapsed = time.perf_counter() - t0
            assert r.status_code == 201, r.text
            if i >= 5:  # the first requests warm the pool and the parameter cache
                single.append(elapsed)

        t0 = time.perf_counter()
        r = await client.post(
            "/v1/remittance-schedules", json={"period": PERIOD, "rows": rows}, headers=as_fac
        )
        json_seconds = time.perf_counter() - t0
        assert r.status_code == 201, r.text[:500]
        out = r.json()
        assert out["accepted"] == n, (out["accepted"], out["results"][:3])

        header = list(rows[0])
        csv_text = (
            ",".join(header) + "\n" + "\n".join(",".join(str(x[h]) for h in header) for x in rows) + "\n"
        )
        t0 = time.perf_counter()
        r = await client.post(
            "/v1/remittance-schedules",
            params={"period": PERIOD},
            content=csv_text,
            headers={**as_fac, "content-type": "text/csv"},
        )
        csv_seconds = time.perf_counter() - t0
        assert r.status_code == 201, r.text[:500]
        assert r.json()["accepted"] == n
        assert r.json()["results"][0]["version"] == 2

    conn = await asyncpg.connect(dsn)
    try:
        columns = [
            c
            for c in await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'declarations' "
                "AND column_name NOT IN ('id', 'seq', 'filing_id', 'version', 'supersedes') "
                "ORDER BY ordinal_position"
            )
        ]
        names = ", ".join(c["column_name"] for c in columns)
        t0 = time.perf_counter()
        await conn.execute(
            f"INSERT INTO declarations (id, filing_id, version, {names}) "
            f"SELECT gen_random_uuid()::text, gen_random_uuid()::text, 1, {names} "
            "FROM declarations WHERE schedule_id = $1",
            out["id"],
        )
        raw_seconds = time.perf_counter() - t0
        events = await conn.fetchval("SELECT count(*) FROM outbox")
    finally:
        await conn.close()

    per_request = statistics.mean(single)
    print(
        f"remittance schedule, {n} rows, JSON, one request : {json_seconds:7.3f} s "
        f"({n / json_seconds:,.0f} rows/s)"
    )
    print(
        f"remittance schedule, {n} rows, CSV (amends all)  : {csv_seconds:7.3f} s "
        f"({n / csv_seconds:,.0f} rows/s)"
    )
    print(
        f"baseline: single-row POST /v1/declarations       : {per_request * 1000:7.2f} ms "
        f"(x {n} = {per_request * n:.1f} s)"
    )
    print(f"baseline: raw INSERT ... SELECT of {n} rows      : {raw_seconds:7.3f} s")
    print(f"ratio schedule / one-at-a-time                   : {json_seconds / (per_request * n):7.3f}")
    print(f"ratio schedule / raw insert                      : {json_seconds / raw_seconds:7.1f}")
    print(f"outbox events queued                             : {events}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
