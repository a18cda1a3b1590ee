"""Assessment consumer: events per second one event per transaction vs in batches.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/bench_consumer_batches.py [--events 2000] [--repeats 3]

Applies the assessment worker's real handlers (``assessment.consumers``) through
``EventConsumer.handle_records``, the path ``EventConsumer.run`` takes for what a poll
brings (500 records of one partition at a time), on a fresh database (alembic head):

* **fresh accounts**: ``declaration.filed`` for ``--events`` distinct PR lodgings (one
  period each, the remittance-schedule case; ``--operator-returns``: an operator's return
  each, which the cross-checks look at), then one ``payment.received`` each;
* **120-period accounts**: ``--long-accounts`` VI lodgings with 120 declared periods
  each, then ``--long-events`` payments spread round-robin over them (each recomputes a
  120-period account).

Each is run with ``batch_size=1`` (one event per transaction, the consumer before
batches) and ``batch_size=200`` (the worker's setting; ``--batched-only``: that alone),
interleaved, ``--repeats`` rounds on disjoint events. The consumer is built as the worker
builds it (its batch set-up ``prepare``, the worker's balance cache) and, once the
events are made, the heap is settled as the worker settles it once started
(``servicekit.cli.settle_heap``, when the source tree has it). Baseline, same run: the
same consumer with a no-op handler and ``batch_size=1`` (inbox row and transaction only).
Prints events/s, the ratio to the baseline's events/s and batched/per-event, medians over
the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from bench_assessment import (
    MIGRATIONS,
    bench_id,
    ce,
    declaration_event,
    declaration_filed,
    lodging_event,
    noop,
    payment_event,
)
from bench_distribution import backend_cpu, backends
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.accounts import handlers as intake
from assessment.accounts.ledger import BalanceCache
from assessment.accounts.repository import attach
from assessment.consumers import BATCH_SIZE, FILING_HANDLERS, REGISTRY_HANDLERS
from servicekit import cli
from servicekit.consumer import EventConsumer, Handler
from servicekit.db import make_engine, make_sessionmaker
from servicekit.runtime import Runtime
from servicekit.testing import consumer_records, fresh_database
from taxcore.events import CloudEvent
from taxcore.periods import Period
from taxcore.rules.declaration import DeclarationInput

POLL = 500  # records per partition per poll (EventConsumer.run's max_records)
HANDLERS = {**REGISTRY_HANDLERS, **FILING_HANDLERS}


async def consume(
    sm: async_sessionmaker[AsyncSession], name: str, events: Sequence[CloudEvent], batch: int,
    handler: Handler | None = None,
) -> tuple[float, float]:  # fmt: skip
    """Events per second through ``handle_records``, a poll's worth at a time, and the CPU
    microseconds per event of this process and the database's backends (/proc: steadier
    than events/s on a loaded machine)."""
    handlers = {t: handler for t in HANDLERS} if handler else HANDLERS
    consumer = EventConsumer(
        name=name, bootstrap="unused:0", topics=[], sessionmaker=sm, handlers=handlers,
        batch_size=batch, max_attempts=1, prepare=None if handler else intake.prepare_filing_batch,
    )  # fmt: skip
    recs = consumer_records(events, topic="bench")
    pids = await backends(sm)
    cpu, db_cpu, t = time.process_time(), backend_cpu(pids), time.perf_counter()
    for start in range(0, len(recs), POLL):
        await consumer.handle_records(recs[start : start + POLL])
    seconds = time.perf_counter() - t
    cpu = time.process_time() - cpu + backend_cpu(pids) - db_cpu
    assert (consumer.applied, consumer.parked) == (len(events), 0)
    return len(events) / seconds, cpu / len(events) * 1e6


def long_account(j: int) -> str:
    return f"VI-{j + 3_000_000:07d}-2"


def long_account_events(j: int) -> list[CloudEvent]:
    account = long_account(j)
    out = [
        ce(
            "roomtax.registry.lodging.registered.v1",
            {
                "lodging_id": f"l-long-{j}",
                "tax_account": account,
                "jurisdiction": "VI",
                "lodging_class": "hotel",
                "casino": False,
                "name": f"Long {j}",
                "municipality": "St. Croix",
                "room_count": 40,
                "operator_id": f"op-long-{j}",
                "registered_on": "2017-10-01",
                "statuses": [{"status": "active", "effective_from": "2017-10-01"}],
            },  # fmt: skip
            subject=account,
        )
    ]
    rng = random.Random(j)
    period = Period(2017, 10)
    for _ in range(120):
        inp = DeclarationInput(
            jurisdiction="VI", lodging_class="hotel", period=str(period),
            room_revenue=Decimal(rng.randrange(5_000, 50_000)), room_nights=rng.randrange(10, 300),
        )  # fmt: skip
        filer = {"filer_kind": "operator", "filer_id": f"op-long-{j}", "schedule_id": None}
        ids = {"declaration_id": bench_id("long", j, period), "filing_id": bench_id("long-f", j, period)}
        out.append(declaration_filed(inp, account=account, lodging_id=f"l-long-{j}", **ids, **filer)[0])
        period = period.next()
    return out


def long_payment(j: int, k: int) -> CloudEvent:
    account = long_account(j)
    return ce(
        "roomtax.filing.payment.received.v1",
        {
            "payment_id": f"long-pay-{j}-{k}-{os.getpid()}",
            "tax_account": account,
            "jurisdiction": "VI",
            "amount": "10.00",
            "method": "ach",
            "received_on": date(2026, 11, 2).isoformat(),
            "payer_kind": "operator",
            "payer_id": f"op-long-{j}",
            "periods": [],
        },  # fmt: skip
        subject=account,
    )


async def main(args: argparse.Namespace) -> None:
    url = await fresh_database("roomtax_bench_batches", MIGRATIONS)
    engine = make_engine(url, application_name="bench-batches", pool_size=2)
    sm = make_sessionmaker(engine, service="assessment")
    runtime = Runtime.from_environment()
    # the worker's memo of taxcore balances (assessment.consumers does this)
    attach(sm, BalanceCache(law=runtime.law), runtime)
    n, reps = args.events, args.repeats
    print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
    try:
        results: dict[str, list[float]] = {}  # events/s per mode and round
        cpus: dict[str, list[float]] = {}  # CPU us per event (this process + PostgreSQL)

        def note(key: str, measured: tuple[float, float]) -> None:
            results.setdefault(key, []).append(measured[0])
            cpus.setdefault(key, []).append(measured[1])

        # fresh accounts: 2 modes x reps rounds, each on its own n lodgings
        modes = (BATCH_SIZE,) if args.batched_only else (1, BATCH_SIZE)
        blocks = len(modes) * reps if n else 0
        await consume(sm, "setup", [lodging_event(i) for i in range(blocks * n)], BATCH_SIZE)
        declarations = [declaration_event(i) for i in range(blocks * n)]
        if args.operator_returns:  # a PMS's returns instead of a schedule's rows: cross-checked
            operator = {"filer_kind": "operator", "filer_id": "op-bench", "schedule_id": None}
            declarations = [(e.model_copy(update={"data": e.data | operator}), a) for e, a in declarations]
        # what the worker does once started (a source tree without it: nothing)
        settle = getattr(cli, "settle_heap", None)
        print(f"heap settled (gc.freeze) as the worker does: {settle is not None}")
        if settle is not None:
            settle()
        for rep in range(reps if n else 0):
            base = await consume(
                sm,
                f"noop-{rep}",
                [
                    e.model_copy(update={"id": bench_id("noop", rep, i)})
                    for i, (e, _) in enumerate(declarations[:n])
                ],
                1,
                noop,
            )  # noqa: E501
            note("baseline", base)
            for m, batch in enumerate(modes):
                block = len(modes) * rep + m
                part = declarations[block * n : (block + 1) * n]
                filed = await consume(sm, f"filed-{rep}-{batch}", [e for e, _ in part], batch)
                first = block * n
                paid = await consume(
                    sm,
                    f"paid-{rep}-{batch}",
                    [payment_event(first + i, a) for i, (_, a) in enumerate(part)],
                    batch,
                )
                note(f"filed-{batch}", filed)
                note(f"paid-{batch}", paid)
            print(
                f"round {rep + 1}: "
                + ", ".join(f"{k} {v[-1]:.0f}/s {cpus[k][-1]:.0f} us CPU" for k, v in results.items()),
                flush=True,
            )
        # 120-period accounts
        setup = [e for j in range(args.long_accounts) for e in long_account_events(j)]
        t = time.perf_counter()
        if setup:
            await consume(sm, "long-setup", setup, BATCH_SIZE)
            print(f"{args.long_accounts} accounts x 120 periods loaded in {time.perf_counter() - t:.1f} s")
        k = 0
        for rep in range(reps if args.long_accounts else 0):
            for batch in modes:
                evs = [long_payment(i % args.long_accounts, k + i) for i in range(args.long_events)]
                k += args.long_events
                note(f"long-paid-{batch}", await consume(sm, f"long-{rep}-{batch}", evs, batch))
            print(
                f"round {rep + 1}: "
                + ", ".join(
                    f"long-paid-{b} {results[f'long-paid-{b}'][-1]:.0f}/s "
                    f"{cpus[f'long-paid-{b}'][-1]:.0f} us CPU"
                    for b in modes
                ),
                flush=True,
            )
        print(f"load after: {os.getloadavg()[0]:.1f}")
        med = {k: statistics.median(v) for k, v in results.items()}
        cpu = {k: statistics.median(v) for k, v in cpus.items()}
        base = med.get("baseline", 0.0) or float("nan")
        print()
        print(
            f"| events (medians of {reps}) | one per transaction | ratio to no-op "
            f"| batches of {BATCH_SIZE} | ratio to no-op | batched / one per tx "
            f"| CPU us/event, one per tx / batches |"
        )
        print("|---|---|---|---|---|---|---|")
        print(
            f"| baseline: no-op handler, one per tx | {base:.0f}/s | 1.00 | | | "
            f"| {cpu.get('baseline', float('nan')):.0f} / |"
        )
        for key, label in (
            ("filed", "declaration.filed, fresh account"),
            ("paid", "payment.received, fresh account"),
            ("long-paid", f"payment.received, 120-period account ({args.long_accounts} accounts)"),
        ):
            if f"{key}-{BATCH_SIZE}" not in med:
                continue
            one, many = med.get(f"{key}-1", float("nan")), med[f"{key}-{BATCH_SIZE}"]
            print(
                f"| {label} | {one:.0f}/s | {one / base:.2f} | {many:.0f}/s | {many / base:.2f} "
                f"| **{many / one:.1f}x** | {cpu.get(f'{key}-1', float('nan')):.0f} / "
                f"{cpu[f'{key}-{BATCH_SIZE}']:.0f} |"
            )
        if f"filed-{BATCH_SIZE}" in med:
            seconds = n / med[f"filed-{BATCH_SIZE}"]
            print(f"\n{n} fresh declarations (a schedule's rows) assessed in batches: {seconds:.1f} s")
    finally:
        await engine.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000, help="per round and mode; 0: skip fresh accounts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--long-accounts", type=int, default=10)
    parser.add_argument("--long-events", type=int, default=300)
    parser.add_argument("--batched-only", action="store_true", help="skip one event per transaction")
    parser.add_argument("--operator-returns", action="store_true", help="PMS returns, not schedule rows")
    asyncio.run(main(parser.parse_args()))
