"""Assessment service: event intake, statement time for a 120-period account, aging time.

Run: ``uv run python bench/bench_assessment.py [accounts] [events]`` (defaults 100,000
and 2,000). Builds a scratch database (``alembic upgrade head``), then:

0. **Intake.** ``events`` lodgings are registered through the registry lodging
   handler (timed too), then ``events`` ``declaration.filed`` events for those
   ``events`` distinct lodgings (one period each, filed by a facilitator on the
   due date: the intermediary remittance schedule case) and one
   ``payment.received`` per declaration, all applied through
   ``EventConsumer.apply`` with the service's handlers, as the worker does:
   sequentially (half of the lodgings) and ``CONCURRENCY`` at a time (the other
   half). Baseline, same run: the same consumer with a no-op handler (inbox row
   and transaction only) over the same events, so the ratio is the cost of the
   service's handling above the chassis. On the 120-period account of (1),
   the per-event cost of a further payment and of an amendment of its last
   period is timed too (as in a running worker: the balances of the periods
   an event leaves unchanged are memoized from the previous event).

1. **Statement.** One VI lodging with 120 monthly periods declared (2017-10 ..
   2026-09) and 120 payments, most of them late and one in ten undesignated,
   loaded through the service's real consumer handlers. Times the
   ``GET /v1/accounts/{tax_account}/statement`` request in-process (facts from
   PostgreSQL, payment allocation across periods, taxcore balance of every
   period). Baseline, same run: taxcore's ``compute_balance`` of the same 120
   periods with the payments already allocated (the pure-law floor), so the
   ratio is the cost of the service around the law. Timed cold (the service's
   memo of taxcore balances cleared before each request), and once more warm.
2. **Aging.** ``accounts`` synthetic rows bulk-loaded (COPY) into
   ``account_summaries`` (two jurisdictions, their lodging classes, due dates
   over three years). Times ``GET /v1/dashboard/aging``. Baseline, same run: a
   bare ``SELECT count(*), sum(balance)`` scan of the same table, so the ratio
   is the cost of the bucketing over a full scan.

Each timing is the median of several runs after one warm-up. The scratch
database is dropped at the end.

**Statement scaling** (``--periods 60 120 240 [--repeats 3] [--runs 5] [--tree NAME=DIR]``,
nothing else runs): VI accounts of that many periods, built like (1) from 2017-10, each
as of the end of the year after its last period, loaded through the consumers; per size the
statement cold and warm as in (1), and the pure-law floor (``compute_balance`` of every
period, payments allocated, ``explain=False`` as the statement computes it). Growth from one
size to the next is the figure to read: 2.0 is linear. Each source tree (this checkout,
"after", and every ``--tree``, e.g. ``git archive main | tar -x -C DIR``) runs in a child
process of its own with its packages first on ``PYTHONPATH``, on its own database, the trees
interleaved round by round; the summary gives the medians over the rounds and after/before.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository
from assessment.accounts.ledger import account_state
from assessment.app import build_app
from assessment.consumers import FILING_HANDLERS, REGISTRY_HANDLERS
from assessment.settings import AssessmentSettings
from servicekit.consumer import EventConsumer, Handler
from servicekit.testing import PG_ADMIN, auth, fresh_database, running_app, test_database_name
from taxcore.events import CloudEvent
from taxcore.money import round_cents
from taxcore.periods import Period, due_date
from taxcore.rules.balance import compute_balance
from taxcore.rules.declaration import DeclarationInput, DeclarationResult, compute_declaration

MIGRATIONS = Path(__file__).resolve().parent.parent / "services/assessment/migrations"
DB = "roomtax_bench_assessment"
ACCOUNT = "VI-0000120-0"
AS_OF = date(2027, 12, 31)


INTAKE_PERIOD = Period(2026, 10)
CONCURRENCY = 8
BENCH_NAMESPACE = uuid.UUID("3d0f7a52-1c4b-4a7e-8f57-2b9c1d6e0a13")


#: the columns of ``account_summaries`` the benches load with COPY
SUMMARY_COLUMNS = [
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
]


def ce(event_type: str, data: dict[str, object], *, subject: str = ACCOUNT) -> CloudEvent:
    return CloudEvent(
        id=str(uuid.uuid4()),
        source="/roomtax/bench",
        type=event_type,
        subject=subject,
        time=datetime.now(UTC),
        data=data,
    )


def bench_id(*parts: object) -> str:
    """Deterministic ids, so two runs build the same facts (and the same postings)."""
    return str(uuid.uuid5(BENCH_NAMESPACE, "|".join(str(p) for p in parts)))


async def median_time(fn: Callable[[], Awaitable[object]], runs: int) -> float:
    await fn()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


async def load_account(consumer: EventConsumer, account: str = ACCOUNT, periods: int = 120) -> None:
    """A VI lodging with ``periods`` monthly periods from 2017-10, declared on time, and one
    payment each (most late, one in seven half the tax, one in ten undesignated)."""
    rng = random.Random(120)
    handlers = {**REGISTRY_HANDLERS, **FILING_HANDLERS}
    lodging = "l-bench" if account == ACCOUNT else f"l-bench-{account}"
    payment_prefix = "bench-pay-" if account == ACCOUNT else f"bench-pay-{account}-"

    def event(event_type: str, data: dict[str, object]) -> CloudEvent:
        return ce(event_type, data, subject=account)

    async def send(ev: CloudEvent) -> None:
        assert await consumer.apply(ev, handlers[ev.type]) == "applied"

    await send(
        event(
            "roomtax.registry.lodging.registered.v1",
            {
                "lodging_id": lodging,
                "tax_account": account,
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
    for i in range(periods):
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
            event(
                "roomtax.filing.declaration.filed.v1",
                {
                    "declaration_id": str(uuid.uuid4()),
                    "filing_id": str(uuid.uuid4()),
                    "version": 1,
                    "supersedes": None,
                    "tax_account": account,
                    "lodging_id": lodging,
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
        amount = res.tax if i % 7 else round_cents(res.tax / 2)
        designated = [] if i % 10 == 0 else [{"period": str(period), "amount": str(amount)}]
        await send(
            event(
                "roomtax.filing.payment.received.v1",
                {
                    "payment_id": f"{payment_prefix}{i:03d}",
                    "tax_account": account,
                    "jurisdiction": "VI",
                    "amount": str(amount),
                    "method": "ach",
                    "received_on": paid_on.isoformat(),
                    "payer_kind": "operator",
                    "payer_id": "op-bench",
                    "periods": designated,
                },
            )
        )
        period = period.next()


# --------------------------------------------------------------------------- intake


def intake_account(i: int) -> str:
    return f"PR-{i + 1_000_000:07d}-1"


def lodging_event(i: int) -> CloudEvent:
    account = intake_account(i)
    return ce(
        "roomtax.registry.lodging.registered.v1",
        {
            "lodging_id": f"l-intake-{i}",
            "tax_account": account,
            "jurisdiction": "PR",
            "lodging_class": "short_term_rental",
            "casino": False,
            "name": f"Bench Rental {i}",
            "municipality": "San Juan",
            "room_count": 2,
            "operator_id": f"op-intake-{i % 500}",
            "registered_on": "2026-01-01",
            "statuses": [{"status": "active", "effective_from": "2026-01-01"}],
        },
        subject=account,
    )


def declaration_filed(
    inp: DeclarationInput,
    *,
    account: str,
    lodging_id: str,
    declaration_id: str,
    filing_id: str,
    filer_kind: str,
    filer_id: str,
    schedule_id: str | None,
) -> tuple[CloudEvent, DeclarationResult]:
    """The filing service's ``declaration.filed`` event of a first version filed on its due date,
    as taxcore computes it (and as declared), with its computation."""
    res = compute_declaration(inp)
    due = due_date(inp.jurisdiction, Period.parse(inp.period)).isoformat()
    event = ce(
        "roomtax.filing.declaration.filed.v1",
        {
            "declaration_id": declaration_id,
            "filing_id": filing_id,
            "version": 1,
            "supersedes": None,
            "tax_account": account,
            "lodging_id": lodging_id,
            "jurisdiction": inp.jurisdiction,
            "lodging_class": inp.lodging_class,
            "period": inp.period,
            "filer_kind": filer_kind,
            "filer_id": filer_id,
            "schedule_id": schedule_id,
            "filed_on": due,
            "due_date": due,
            "late": False,
            "input": inp.model_dump(mode="json"),
            "taxable_base": str(res.taxable_base),
            "tax": str(res.tax),
            "impact_fee": str(res.impact_fee),
            "total_due": str(res.total_due),
            "declared_tax": str(res.tax),
            "declared_total": str(res.total_due),
            "findings": [],
        },
        subject=account,
    )
    return event, res


def declaration_event(i: int) -> tuple[CloudEvent, Decimal]:
    """A facilitator's declaration for one lodging's period (one row of a remittance schedule)."""
    rng = random.Random(i)
    account = intake_account(i)
    period = str(INTAKE_PERIOD)
    inp = DeclarationInput(
        jurisdiction="PR",
        lodging_class="short_term_rental",
        period=period,
        room_revenue=Decimal(rng.randrange(500, 20_000)),
        room_nights=rng.randrange(1, 31),
    )
    filer = {"filer_kind": "facilitator", "filer_id": "fac-bench", "schedule_id": "schedule-bench"}
    ids = {"declaration_id": bench_id("declaration", i), "filing_id": bench_id("filing", i)}
    event, res = declaration_filed(inp, account=account, lodging_id=f"l-intake-{i}", **ids, **filer)
    return event, res.total_due


def payment_event(i: int, amount: Decimal) -> CloudEvent:
    account = intake_account(i)
    return ce(
        "roomtax.filing.payment.received.v1",
        {
            "payment_id": f"intake-pay-{i}",
            "tax_account": account,
            "jurisdiction": "PR",
            "amount": str(amount),
            "method": "ach",
            "received_on": due_date("PR", INTAKE_PERIOD).isoformat(),
            "payer_kind": "facilitator",
            "payer_id": "fac-bench",
            "periods": [{"period": str(INTAKE_PERIOD), "amount": str(amount)}],
        },
        subject=account,
    )


def renamed(event: CloudEvent) -> CloudEvent:
    """The same event under a fresh id (the baseline must not hit the inbox's duplicates)."""
    return event.model_copy(update={"id": str(uuid.uuid4())})


async def noop(session: AsyncSession, event: CloudEvent) -> None:
    return None


async def apply_all(
    consumer: EventConsumer, events: list[CloudEvent], handler: Handler | None, concurrency: int
) -> float:
    """Seconds to apply ``events`` (``concurrency`` at a time, each in its own transaction)."""
    handlers = {**REGISTRY_HANDLERS, **FILING_HANDLERS}
    queue = iter(events)

    async def worker() -> None:
        for event in queue:
            result = await consumer.apply(event, handler or handlers[event.type])
            assert result == "applied", (event.type, result)

    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t


async def intake_bench(consumer: EventConsumer, baseline: EventConsumer, n: int) -> list[str]:
    half = n // 2
    lodgings = [lodging_event(i) for i in range(n)]
    declarations = [declaration_event(i) for i in range(n)]
    filed = [e for e, _ in declarations]
    paid = [payment_event(i, amount) for i, (_, amount) in enumerate(declarations)]
    lines = [f"intake: {n:,} events of each kind, {n:,} fresh PR lodgings, one period each"]

    def rate(label: str, seconds: float, count: int, base: float) -> str:
        return (
            f"  {label:<42} {count / seconds:8.0f} events/s  ({seconds / count * 1000:6.2f} ms/event)"
            f"   ratio {seconds / base:5.2f}"
        )

    for label, conc, part in (
        ("sequential", 1, slice(0, half)),
        (f"{CONCURRENCY} concurrent", CONCURRENCY, slice(half, n)),
    ):
        count = len(lodgings[part])
        base_s = await apply_all(baseline, [renamed(e) for e in filed[part]], noop, conc)
        lines.append(f" {label}:")
        lines.append(
            f"  {'baseline: no-op handler (inbox row + tx)':<42} {count / base_s:8.0f} events/s"
            f"  ({base_s / count * 1000:6.2f} ms/event)"
        )
        lodging_s = await apply_all(consumer, lodgings[part], None, conc)
        lines.append(rate("lodging.registered (projection)", lodging_s, count, base_s))
        filed_s = await apply_all(consumer, filed[part], None, conc)
        lines.append(rate("declaration.filed (fresh account)", filed_s, count, base_s))
        paid_s = await apply_all(consumer, paid[part], None, conc)
        lines.append(rate("payment.received (pays it in full)", paid_s, count, base_s))
    return lines


async def long_account_bench(consumer: EventConsumer, runs: int = 10) -> list[str]:
    """Per-event cost on the 120-period account: a payment, and an amendment of its last period."""
    async with consumer.sessionmaker() as session:
        facts = await repository.load_facts(session, ACCOUNT)
    assert facts is not None
    last = max(facts.liabilities, key=lambda r: r.period)
    pay_s: list[float] = []
    amend_s: list[float] = []
    handlers = {**REGISTRY_HANDLERS, **FILING_HANDLERS}
    previous = last.declaration_id
    for k in range(runs):
        payment = ce(
            "roomtax.filing.payment.received.v1",
            {
                "payment_id": f"bench-long-pay-{k:03d}",
                "tax_account": ACCOUNT,
                "jurisdiction": "VI",
                "amount": "100.00",
                "method": "ach",
                "received_on": (last.filed_on + timedelta(days=10 + k)).isoformat(),
                "payer_kind": "operator",
                "payer_id": "op-bench",
                "periods": [],
            },
        )
        t = time.perf_counter()
        assert await consumer.apply(payment, handlers[payment.type]) == "applied"
        pay_s.append(time.perf_counter() - t)
        inp = DeclarationInput.model_validate(
            {**last.input, "room_revenue": str(Decimal(last.input["room_revenue"]) + 100 * (k + 1))}
        )
        res = compute_declaration(inp)
        declaration_id = bench_id("long-amendment", k)
        filed_on = last.filed_on + timedelta(days=10 + k)
        amendment = ce(
            "roomtax.filing.declaration.amended.v1",
            {
                "declaration_id": declaration_id,
                "filing_id": last.filing_id,
                "version": k + 2,
                "supersedes": previous,
                "tax_account": ACCOUNT,
                "lodging_id": "l-bench",
                "jurisdiction": "VI",
                "lodging_class": "hotel",
                "period": last.period,
                "filer_kind": "operator",
                "filer_id": "op-bench",
                "filed_on": filed_on.isoformat(),
                "due_date": last.filed_on.isoformat(),
                "late": True,
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
        previous = declaration_id
        t = time.perf_counter()
        assert await consumer.apply(amendment, handlers[amendment.type]) == "applied"
        amend_s.append(time.perf_counter() - t)
    return [
        f"120-period account, per event (median of {runs}):",
        f"  payment.received (undesignated)              {statistics.median(pay_s) * 1000:8.1f} ms",
        f"  declaration.amended (last period)            {statistics.median(amend_s) * 1000:8.1f} ms",
    ]


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
            columns=SUMMARY_COLUMNS,
        )
        await conn.execute("ANALYZE account_summaries")
    finally:
        await conn.close()


def bench_consumer(app: FastAPI, name: str) -> EventConsumer:
    """The service's consumer without a broker: the bench hands it events with ``apply``."""
    return EventConsumer(
        name=name,
        bootstrap="unused:9092",
        topics=[],
        sessionmaker=app.state.sessionmaker,
        handlers={},
        max_attempts=1,
    )


async def drop_database(name: str) -> None:
    """Drop the scratch database ``name`` (with the run's suffix, as ``fresh_database`` made it)."""
    conn = await asyncpg.connect(f"{PG_ADMIN}/postgres")
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{test_database_name(name)}" WITH (FORCE)')
    finally:
        await conn.close()


def clear_balances(app: FastAPI) -> None:
    """Empty the app's memo of taxcore balances (a tree before ``BalanceCache``: the module's)."""
    cache = getattr(app.state, "balances", None)
    if cache is not None:
        cache.clear()
    else:  # pragma: no cover - the code of an earlier commit, run by --before comparisons
        importlib.import_module("assessment.accounts.ledger").clear_balance_cache()


async def main(n: int, events: int) -> None:
    url = await fresh_database(DB, MIGRATIONS)
    settings = AssessmentSettings(environment="test", database_url=url)
    app = build_app(settings)
    admin = auth("agency-auditor")
    try:
        async with running_app(app) as client:
            consumer = bench_consumer(app, "bench")
            intake_lines = await intake_bench(consumer, bench_consumer(app, "bench-noop"), events)
            t = time.perf_counter()
            await load_account(consumer)
            load_s = time.perf_counter() - t

            async def get_statement() -> None:
                r = await client.get(
                    f"/v1/accounts/{ACCOUNT}/statement", params={"as_of": AS_OF.isoformat()}, headers=admin
                )
                assert r.status_code == 200, r.text
                assert len(r.json()["periods"]) == 120

            statement_warm_s = await median_time(get_statement, 5)

            async def get_statement_cold() -> None:
                clear_balances(app)  # the statement as the first read after a restart
                await get_statement()

            statement_s = await median_time(get_statement_cold, 5)
            async with app.state.sessionmaker() as session:
                facts = await repository.load_facts(session, ACCOUNT)
            assert facts is not None
            state = account_state(facts, AS_OF)

            async def floor() -> None:
                for period in state.periods:
                    compute_balance(state.history(period), as_of=AS_OF)

            floor_s = await median_time(floor, 5)
            long_lines = await long_account_bench(consumer)

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
        await drop_database(DB)

    print("\n".join(intake_lines))
    print(f"load: 120 periods + 120 payments through the consumers in {load_s:.2f} s")
    print(f"statement, 120 periods (HTTP, DB, allocation, taxcore): {statement_s * 1000:8.1f} ms")
    print(
        f"  baseline: taxcore compute_balance x 120, same facts:   {floor_s * 1000:8.1f} ms"
        f"   ratio {statement_s / floor_s:.2f}"
    )
    print(f"  the same statement again (taxcore balances memoized):  {statement_warm_s * 1000:8.1f} ms")
    print("\n".join(long_lines))
    print(f"aging over {n:,} accounts (HTTP + SQL buckets):          {aging_s * 1000:8.1f} ms")
    print(
        f"  baseline: SELECT count(*), sum(balance) full scan:       {scan_s * 1000:8.1f} ms"
        f"   ratio {aging_s / scan_s:.2f}"
    )


# --------------------------------------------------------------------------- statement scaling

SCALING_DB = "roomtax_bench_statements"


def scaling_account(periods: int) -> str:
    return f"VI-{periods:07d}-9"


def scaling_as_of(periods: int) -> date:
    """The end of the year after the account's last period (120 periods: 2017-10 .. 2027-09,
    as of 2028-12-31)."""
    last_year = (2017 * 12 + 9 + periods - 1) // 12
    return date(last_year + 1, 12, 31)


async def statement_child(name: str, sizes: list[int], runs: int) -> None:
    """One tree's statements of accounts of ``sizes`` periods: cold, warm and the pure-law floor."""
    db = f"{SCALING_DB}_{name}"
    url = await fresh_database(db, MIGRATIONS)
    settings = AssessmentSettings(environment="test", database_url=url)
    app = build_app(settings)
    admin = auth("agency-auditor")
    results: dict[int, dict[str, float]] = {}
    try:
        async with running_app(app) as client:
            consumer = bench_consumer(app, "bench-statements")
            for n in sizes:
                account, as_of = scaling_account(n), scaling_as_of(n)
                t = time.perf_counter()
                await load_account(consumer, account, n)
                load_s = time.perf_counter() - t

                async def get_statement(account: str = account, as_of: date = as_of, n: int = n) -> None:
                    r = await client.get(
                        f"/v1/accounts/{account}/statement",
                        params={"as_of": as_of.isoformat()},
                        headers=admin,
                    )
                    assert r.status_code == 200, r.text
                    assert len(r.json()["periods"]) == n

                async def get_statement_cold(get: Callable[[], Awaitable[None]] = get_statement) -> None:
                    clear_balances(app)
                    await get()

                warm_s, warm_cpu = await median_wall_cpu(get_statement, runs)
                cold_s, cold_cpu = await median_wall_cpu(get_statement_cold, runs)
                async with app.state.sessionmaker() as session:
                    facts = await repository.load_facts(session, account)
                assert facts is not None
                state = account_state(facts, as_of)

                async def floor(state: Any = state, as_of: date = as_of) -> None:
                    for period in state.periods:
                        compute_balance(state.history(period), as_of=as_of, explain=False)

                floor_s, floor_cpu = await median_wall_cpu(floor, runs)
                results[n] = {
                    "load": load_s,
                    "cold": cold_s,
                    "warm": warm_s,
                    "floor": floor_s,
                    "cold_cpu": cold_cpu,
                    "warm_cpu": warm_cpu,
                    "floor_cpu": floor_cpu,
                }
    finally:
        await drop_database(db)
    print("RESULT " + json.dumps({"tree": name, "results": results}))


async def median_wall_cpu(fn: Callable[[], Awaitable[object]], runs: int) -> tuple[float, float]:
    """Median wall and process-CPU seconds of ``runs`` calls after one warm-up, each started
    after a full collection (so one size's run does not pay for another's garbage). On a
    shared machine the CPU seconds are the steadier figure: wall time follows the share of
    the cores the process gets."""
    await fn()
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        gc.collect()
        t, c = time.perf_counter(), time.process_time()
        await fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


FIGURES = ("cold", "warm", "floor", "cold_cpu", "warm_cpu", "floor_cpu")


def _ms(figures: dict[str, float]) -> str:
    return ", ".join(f"{k} {figures[k] * 1000:.1f}" for k in FIGURES) + " ms"


def statement_scaling(sizes: list[int], runs: int, repeats: int, trees: list[tuple[str, Path]]) -> None:
    """Statements of 60/120/240-period accounts, cold and warm, one child process per source
    tree and round (interleaved), each tree on its own database; medians over the rounds."""
    here = Path(__file__).resolve()
    seen: dict[str, list[dict[str, dict[str, float]]]] = defaultdict(list)
    for round_no in range(1, repeats + 1):
        for name, tree in trees:
            # the tree's packages come before the workspace's editable installs (this one's too,
            # so a copy of this checkout, e.g. `git archive HEAD`, runs its own code)
            packages = ["services/assessment", "services/filing", "libs/servicekit", "libs/taxcore"]
            env = dict(os.environ, PYTHONPATH=":".join(str(tree / p) for p in packages))
            now = f"{datetime.now(UTC):%H:%M:%S}"
            print(f"=== round {round_no} {name} ({tree}) {now} load {_load()}", flush=True)
            args = ["--statement-child", name, "--periods", *map(str, sizes), "--runs", str(runs)]
            command = [sys.executable, "-u", str(here), *args]
            out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            line = next(x for x in out.splitlines() if x.startswith("RESULT "))
            result = json.loads(line.removeprefix("RESULT "))["results"]
            seen[name].append(result)
            for n, figures in result.items():
                print(f"    {n:>4} periods: {_ms(figures)}, load {figures['load']:.1f} s", flush=True)
    print(f"\nstatement scaling, medians of {repeats} interleaved rounds ({runs} runs each)", end="")
    print(f", load now {_load()}")
    print("ms: wall cold, warm, floor, then the process's CPU for each; x: growth from the previous size")
    print("tree      periods" + "".join(f"{k:>10}" for k in FIGURES))
    medians: dict[str, dict[int, dict[str, float]]] = {}
    for name, _ in trees:
        medians[name] = {
            n: {k: statistics.median(r[str(n)][k] for r in seen[name]) for k in FIGURES} for n in sizes
        }
        previous: dict[str, float] | None = None
        for n in sizes:
            m = medians[name][n]
            if previous:
                print(f"{'':<9} {'x':>7}" + "".join(f"{m[k] / previous[k]:10.2f}" for k in FIGURES))
            print(f"{name:<9} {n:>7}" + "".join(f"{m[k] * 1000:10.1f}" for k in FIGURES))
            previous = m
    first = trees[0][0]
    for name, _ in trees[1:]:
        for n in sizes:
            a, b = medians[first][n], medians[name][n]
            ratios = ", ".join(f"{k} {a[k] / b[k]:.3f}" for k in FIGURES)
            print(f"{first}/{name} at {n} periods: {ratios}")


def _tree(text: str) -> tuple[str, Path]:
    name, _, path = text.partition("=")
    if not path:
        raise argparse.ArgumentTypeError("--tree NAME=DIR")
    return name, Path(path).resolve()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("accounts", nargs="?", type=int, default=100_000)
    parser.add_argument("events", nargs="?", type=int, default=2_000)
    parser.add_argument(
        "--periods", type=int, nargs="+", help="statement scaling only: accounts of these many periods"
    )
    parser.add_argument("--runs", type=int, default=5, help="statement scaling: timed requests per figure")
    parser.add_argument("--repeats", type=int, default=3, help="statement scaling: interleaved rounds")
    parser.add_argument(
        "--tree", type=_tree, action="append", default=[], help="statement scaling: NAME=DIR of another tree"
    )
    parser.add_argument("--statement-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.statement_child:
        asyncio.run(statement_child(args.statement_child, args.periods, args.runs))
    elif args.periods:
        here = ("after", Path(__file__).resolve().parent.parent)
        statement_scaling(args.periods, args.runs, args.repeats, [here, *args.tree])
    else:
        asyncio.run(main(args.accounts, args.events))
