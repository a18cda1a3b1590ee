"""Assessment service: statement time for a 120-period account, aging time over 100,000 accounts.

Run: ``uv run python bench/bench_assessment.py [accounts]`` (default 100,000).
Builds a scratch database (``alembic upgrade head``), then:

1. **Statement.** One VI lodging with 120 monthly periods declared (2017-10 ..
   2026-09) and 120 payments, most of them late and one in ten undesignated,
   loaded through the service's real consumer handlers. Times the
   ``GET /v1/accounts/{tax_account}/statement`` request in-process (facts from
   PostgreSQL, payment allocation across periods, taxcore balance of every
   period). Baseline, same run: taxcore's ``compute_balance`` of the same 120
   periods with the payments already allocated (the pure-law floor), so the
   ratio is the cost of the service around the law.
2. **Aging.** ``accounts`` synthetic rows bulk-loaded (COPY) into
   ``account_summaries`` (two jurisdictions, their lodging classes, due dates
   over three years). Times ``GET /v1/dashboard/aging``. Baseline, same run: a
   bare ``SELECT count(*), sum(balance)`` scan of the same table, so the ratio
   is the cost of the bucketing over a full scan.

Each timing is the median of several runs after one warm-up. The scratch
database is dropped at the end.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import asyncpg

from assessment.accounts import repository
from assessment.accounts.ledger import account_state
from assessment.app import build_app
from assessment.consumers import FILING_HANDLERS, REGISTRY_HANDLERS
from assessment.settings import AssessmentSettings
from servicekit.consumer import EventConsumer
from servicekit.testing import PG_ADMIN, auth, fresh_database, running_app
from taxcore.events import CloudEvent
from taxcore.periods import Period, due_date
from taxcore.rules.balance import compute_balance
from taxcore.rules.declaration import DeclarationInput, compute_declaration

MIGRATIONS = Path(__file__).resolve().parent.parent / "services/assessment/migrations"
DB = "roomtax_bench_assessment"
ACCOUNT = "VI-0000120-0"
AS_OF = date(2027, 12, 31)


def ce(event_type: str, data: dict[str, object]) -> CloudEvent:
    return CloudEvent(
        id=str(uuid.uuid4()),
        source="/roomtax/bench",
        type=event_type,
        subject=ACCOUNT,
        time=datetime.now(UTC),
        data=data,
    )


async def median_time(fn: Callable[[], Awaitable[object]], runs: int) -> float:
    await fn()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


async def load_account(consumer: EventConsumer) -> None:
    rng = random.Random(120)
    handlers = {**REGISTRY_HANDLERS, **FILING_HANDLERS}

    async def send(event: CloudEvent) -> None:
        assert await consumer.apply(event, handlers[event.type]) == "applied"

    await send(
        ce(
            "roomtax.registry.lodging.registered.v1",
            {
                "lodging_id": "l-bench",
                "tax_account": ACCOUNT,
                "jurisdiction": "VI",
                "lodging_class": "hotel",
                "casino": False,
                "name": "Bench Resort",
                "municipality": "St. Croix",
                "room_count": 120,
                "operator_id": "op-bench",
                "registered_on": "2017-10-01",
                "statuses": [{"status": "active", "effective_from": "2017-10-01"}],
            },
        )
    )
    period = Period(2017, 10)
    for i in range(120):
        inp = DeclarationInput(
            jurisdiction="VI",
            lodging_class="hotel",
            period=str(period),
            room_revenue=Decimal(rng.randrange(50_000, 150_000)),
            room_nights=900,
        )
        res = compute_declaration(inp)
        due = due_date("VI", period)
        await send(
            ce(
                "roomtax.filing.declaration.filed.v1",
                {
                    "declaration_id": str(uuid.uuid4()),
                    "filing_id": str(uuid.uuid4()),
                    "version": 1,
                    "supersedes": None,
                    "tax_account": ACCOUNT,
                    "lodging_id": "l-bench",
                    "jurisdiction": "VI",
                    "lodging_class": "hotel",
                    "period": str(period),
                    "filer_kind": "operator",
                    "filer_id": "op-bench",
                    "filed_on": due.isoformat(),
                    "due_date": due.isoformat(),
                    "late": False,
                    "input": inp.model_dump(mode="json"),
                    "taxable_base": str(res.taxable_base),
                    "tax": str(res.tax),
                    "impact_fee": "0.00",
                    "total_due": str(res.total_due),
                    "declared_tax": str(res.tax),
                    "declared_total": str(res.total_due),
                    "findings": [],
                },
            )
        )
        paid_on = due + timedelta(days=rng.choice([0, 0, 5, 20, 45, 100]))
        amount = res.tax if i % 7 else res.tax / 2
        periods = [] if i % 10 == 0 else [{"period": str(period), "amount": str(amount)}]
        await send(
            ce(
                "roomtax.filing.payment.received.v1",
                {
                    "payment_id": f"bench-pay-{i:03d}",
                    "tax_account": ACCOUNT,
                    "jurisdiction": "VI",
                    "amount": str(amount),
                    "method": "ach",
                    "received_on": paid_on.isoformat(),
                    "payer_kind": "operator",
                    "payer_id": "op-bench",
                    "periods": periods,
                },
            )
        )
        period = period.next()


CLASSES = {
    "PR": ["hotel", "condohotel", "inn", "motel", "short_term_rental", "guesthouse"],
    "VI": ["hotel", "apartment_condominium_residence", "timeshare"],
}


async def load_summaries(dsn: str, n: int) -> None:
    rng = random.Random(100_000)
    records = []
    for i in range(n):
        jur = "PR" if i % 3 else "VI"
        due = AS_OF - timedelta(days=rng.randrange(-30, 3 * 365))
        balance = Decimal(rng.randrange(0, 2_000_000)) / 100 if rng.random() < 0.7 else Decimal("0.00")
        assessed = balance + Decimal(rng.randrange(0, 500_000)) / 100
        records.append(
            (
                f"{jur}-{i:07d}-0",
                f"{due.year:04d}-{due.month:02d}",
                jur,
                rng.choice(CLASSES[jur]),
                f"op-{i % 5000}",
                due,
                "declaration",
                assessed,
                assessed,
                assessed - balance,
                balance,
                AS_OF,
                datetime.now(UTC),
            )
        )
    conn = await asyncpg.connect(dsn)
    try:
        await conn.copy_records_to_table(
            "account_summaries",
            records=records,
            columns=[
                "tax_account",
                "period",
                "jurisdiction",
                "lodging_class",
                "operator_id",
                "due_date",
                "basis",
                "principal",
                "total_assessed",
                "total_paid",
                "balance",
                "as_of",
                "refreshed_at",
            ],
        )
        await conn.execute("ANALYZE account_summaries")
    finally:
        await conn.close()


async def main(n: int) -> None:
    url = await fresh_database(DB, MIGRATIONS)
    settings = AssessmentSettings(environment="test", database_url=url)
    app = build_app(settings)
    admin = auth("agency-auditor")
    try:
        async with running_app(app) as client:
            consumer = EventConsumer(
                name="bench",
                bootstrap="unused:9092",
                topics=[],
                sessionmaker=app.state.sessionmaker,
                handlers={},
            )
            t = time.perf_counter()
            await load_account(consumer)
            load_s = time.perf_counter() - t

            async def get_statement() -> None:
                r = await client.get(
                    f"/v1/accounts/{ACCOUNT}/statement", params={"as_of": AS_OF.isoformat()}, headers=admin
                )
                assert r.status_code == 200, r.text
                assert len(r.json()["periods"]) == 120

            statement_s = await median_time(get_statement, 5)
            async with app.state.sessionmaker() as session:
                facts = await repository.load_facts(session, ACCOUNT)
            assert facts is not None
            state = account_state(facts, AS_OF)

            async def floor() -> None:
                for period in state.periods:
                    compute_balance(state.history(period), as_of=AS_OF)

            floor_s = await median_time(floor, 5)

            await load_summaries(settings.asyncpg_dsn, n)

            async def aging() -> None:
                r = await client.get(
                    "/v1/dashboard/aging", params={"as_of": AS_OF.isoformat()}, headers=admin
                )
                assert r.status_code == 200, r.text
                assert sum(row["accounts"] for row in r.json()["rows"]) > 0.6 * n

            aging_s = await median_time(aging, 5)
            conn = await asyncpg.connect(settings.asyncpg_dsn)
            try:

                async def scan() -> None:
                    await conn.fetchrow("SELECT count(*), sum(balance) FROM account_summaries")

                scan_s = await median_time(scan, 5)
            finally:
                await conn.close()
    finally:
        conn = await asyncpg.connect(f"{PG_ADMIN}/postgres")
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        finally:
            await conn.close()

    print(f"load: 120 periods + 120 payments through the consumers in {load_s:.2f} s")
    print(f"statement, 120 periods (HTTP, DB, allocation, taxcore): {statement_s * 1000:8.1f} ms")
    print(
        f"  baseline: taxcore compute_balance x 120, same facts:   {floor_s * 1000:8.1f} ms"
        f"   ratio {statement_s / floor_s:.2f}"
    )
    print(f"aging over {n:,} accounts (HTTP + SQL buckets):          {aging_s * 1000:8.1f} ms")
    print(
        f"  baseline: SELECT count(*), sum(balance) full scan:       {scan_s * 1000:8.1f} ms"
        f"   ratio {aging_s / scan_s:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000))
