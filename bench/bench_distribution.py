"""Throughput of the distribution service on a real PostgreSQL.

Run: ``uv run python bench/bench_distribution.py [collections]``. Builds a scratch
database, applies ``collection.posted`` events one by one through the consumer
(inbox + journal entry per event, one transaction each), then posts a PR month's
run over all of them through the HTTP API in-process, and prints events/s and
the run's latency. The scratch database is dropped at the end.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import asyncpg

from distribution.app import build_app
from distribution.ledger.handlers import COLLECTION_POSTED, on_collection_posted
from distribution.settings import DistributionSettings
from servicekit.consumer import EventConsumer
from servicekit.testing import auth, database_url, fresh_database, running_app
from taxcore.events import CloudEvent

MIGRATIONS = Path(__file__).resolve().parent.parent / "services/distribution/migrations"
DB = "roomtax_bench_distribution"
CONCURRENCY = 8


def event(i: int) -> CloudEvent:
    return CloudEvent(
        id=str(uuid.uuid4()),
        source="/roomtax/assessment",
        type=COLLECTION_POSTED,
        time=datetime.now(UTC),
        data={
            "posting_id": f"bench-{i}",
            "payment_id": f"pay-{i}",
            "tax_account": f"PR-{i % 500:05d}",
            "jurisdiction": "PR",
            "lodging_class": "hotel",
            "period": "2026-06",
            "component": "tax" if i % 10 else "penalty",
            "amount": f"{1000 + i % 997}.{i % 100:02d}",
            "collected_on": date(2026, 7, 1 + i % 28).isoformat(),
            "section": "§28",
        },
    )


async def main(n: int) -> None:
    url = await fresh_database(DB, MIGRATIONS)
    app = build_app(DistributionSettings(environment="test", database_url=url))
    try:
        async with running_app(app) as client:
            consumer = EventConsumer(
                name="bench",
                bootstrap="unused:0",
                topics=[],
                sessionmaker=app.state.sessionmaker,
                handlers={COLLECTION_POSTED: on_collection_posted},
            )
            events = [event(i) for i in range(n)]
            start = time.perf_counter()
            sem = asyncio.Semaphore(CONCURRENCY)

            async def one(e: CloudEvent) -> None:
                async with sem:
                    await consumer.apply(e, on_collection_posted)

            await asyncio.gather(*(one(e) for e in events))
            took = time.perf_counter() - start
            print(
                f"collection.posted applied: {n} in {took:.2f}s = {n / took:,.0f} events/s "
                f"({CONCURRENCY} concurrent)"
            )

            async def nothing(session: object, e: CloudEvent) -> None:
                return None

            baseline_events = [event(n + i) for i in range(n)]

            async def bare(e: CloudEvent) -> None:
                async with sem:
                    await consumer.apply(e, nothing)  # type: ignore[arg-type]

            start = time.perf_counter()
            await asyncio.gather(*(bare(e) for e in baseline_events))
            base = time.perf_counter() - start
            print(
                f"  baseline: the same consumer with a no-op handler (inbox row + transaction): "
                f"{n / base:,.0f} events/s; ratio {took / base:.2f}"
            )
            admin = auth("agency-admin")
            await client.post(
                "/v1/certifications",
                headers=admin,
                json={
                    "fiscal_year": 2027,
                    "amount": "1200000.00",
                    "certified_on": "2026-06-15",
                    "document_reference": "bench",
                },
            )
            start = time.perf_counter()
            r = await client.post("/v1/runs", json={"jurisdiction": "PR", "month": "2026-07"}, headers=admin)
            took = time.perf_counter() - start
            assert r.status_code == 201, r.text
            print(
                f"run over {r.json()['inputs']['collections']} collections: {took * 1000:.0f} ms "
                f"(collected {r.json()['collected']})"
            )
            start = time.perf_counter()
            await client.get("/v1/runs", headers=admin)
            listing = time.perf_counter() - start
            print(
                f"  baseline: GET /v1/runs on the same app: {listing * 1000:.1f} ms; "
                f"ratio {took / listing:.1f}"
            )
            start = time.perf_counter()
            r = await client.get("/v1/funds", params={"jurisdiction": "PR"}, headers=admin)
            print(
                f"fund balances: {(time.perf_counter() - start) * 1000:.1f} ms, "
                f"conserved={r.json()['conserved']}"
            )
    finally:
        conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
        await conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        await conn.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000))
