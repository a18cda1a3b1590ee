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

**Schedules** (``--schedule 1000 10000 50000 [--repeats 1] [--tree NAME=DIR]``): an
intermediary's schedule of that many rows, its ``declaration.filed`` events through the filing
consumer in batches of 200 (as the worker: ``prepare``, balance cache, heap settled), timed from
the first poll to the last: seconds, and CPU microseconds per declaration of the process and of
the PostgreSQL backends, overall and in the first and last tenth of the polls (equal when the
cost is linear in the rows). The registry (the largest size's lodgings, registered through the
registry consumer) is made once into a template database, kept between runs, and each run
starts on a copy of it (``CREATE DATABASE ... TEMPLATE``): the same registry for every size and
tree. Each source tree (this checkout, "after", and every ``--tree``, e.g.
``git archive <commit> | tar -x -C DIR``) runs each size in a child process of its own with its
packages first on ``PYTHONPATH``; sizes and trees interleaved, ``--repeats`` rounds, medians.
**Wide accounts** (``--wide-accounts 400 --wide-periods 150 [--repeats 3] [--tree NAME=DIR]``):
the event-lag bench's shape. ``--wide-accounts`` PR hotels with ``--wide-periods`` declared
periods each (filed on their due dates, unpaid), made once into a template database (this
checkout's code, kept between runs); then each account gets ONE new ``declaration.filed`` (its
next period; ``--wide-amend``: a second version of a past period instead), all through the filing
consumer in batches of 200 as the worker, so each batch holds one event per account and
recomputes 200 long accounts. Each tree runs in a child process on a copy of the template:
the no-op baseline (one per transaction) on the same number of events, then the events;
events/s and CPU us/event of the process and the PostgreSQL backends; trees interleaved,
``--repeats`` rounds, medians and the ratio of each tree to the first ("after").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import asyncpg
from bench_assessment import (
    MIGRATIONS,
    _tree,
    bench_id,
    ce,
    declaration_event,
    declaration_filed,
    lodging_event,
    noop,
    payment_event,
)
from bench_distribution import backend_cpu, backends
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

import assessment
from assessment.accounts import handlers as intake
from assessment.accounts.ledger import BalanceCache
from assessment.accounts.repository import attach
from assessment.consumers import BATCH_SIZE, FILING_HANDLERS, REGISTRY_HANDLERS
from servicekit import cli
from servicekit.consumer import EventConsumer, Handler
from servicekit.db import make_engine, make_sessionmaker
from servicekit.migrations import upgrade
from servicekit.runtime import Runtime
from servicekit.testing import consumer_records, database_url, fresh_database, test_database_name
from taxcore.events import CloudEvent
from taxcore.periods import Period
from taxcore.rules.declaration import DeclarationInput

POLL = 500  # records per partition per poll (EventConsumer.run's max_records)
HANDLERS = {**REGISTRY_HANDLERS, **FILING_HANDLERS}


async def consume(
    sm: async_sessionmaker[AsyncSession], name: str, events: Sequence[CloudEvent], batch: int,
    handler: Handler | None = None, polls: list[tuple[float, float]] | None = None,
) -> tuple[float, float]:  # fmt: skip
    """Events per second through ``handle_records``, a poll's worth at a time, and the CPU
    microseconds per event of this process and the database's backends (/proc: steadier
    than events/s on a loaded machine); ``polls`` gets each poll's (process, backends) CPU
    seconds."""
    handlers = {t: handler for t in HANDLERS} if handler else HANDLERS
    consumer = EventConsumer(
        name=name, bootstrap="unused:0", topics=[], sessionmaker=sm, handlers=handlers,
        batch_size=batch, max_attempts=1, prepare=None if handler else intake.prepare_filing_batch,
    )  # fmt: skip
    recs = consumer_records(events, topic="bench")
    pids = await backends(sm)
    cpu, db_cpu, t = time.process_time(), backend_cpu(pids), time.perf_counter()
    for start in range(0, len(recs), POLL):
        before = (time.process_time(), backend_cpu(pids)) if polls is not None else (0.0, 0.0)
        await consumer.handle_records(recs[start : start + POLL])
        if polls is not None:
            polls.append((time.process_time() - before[0], backend_cpu(pids) - before[1]))
    seconds = time.perf_counter() - t
    cpu = time.process_time() - cpu + backend_cpu(pids) - db_cpu
    assert (consumer.applied, consumer.parked) == (len(events), 0)
    return len(events) / seconds, cpu / len(events) * 1e6


REGISTERED = "roomtax.registry.lodging.registered.v1"


async def consume_setup(
    sm: async_sessionmaker[AsyncSession], name: str, events: Sequence[CloudEvent]
) -> None:
    """A set-up's events, in batches, its lodgings' registrations first: the worker's registry
    and filing consumers are separate, so a lodging is never registered inside a filing batch.
    In one batch with its account's first declarations, the batch's set-up finds no lodging
    (``prepare_batch``) and its summaries were stored without the operator, which the next
    batch of the account then rewrote, every period of it."""
    lodgings = [e for e in events if e.type == REGISTERED]
    others = [e for e in events if e.type != REGISTERED]
    for part, events_of in ((f"{name}-lodgings", lodgings), (name, others)):
        if events_of:
            await consume(sm, part, events_of, BATCH_SIZE)


def registered(
    account: str, kind: str, j: int, jurisdiction: str, municipality: str, rooms: int, since: str
) -> CloudEvent:
    """The registry's ``lodging.registered`` of a bench hotel (``kind``: "long", "wide")."""
    return ce(
        REGISTERED,
        {
            "lodging_id": f"l-{kind}-{j}",
            "tax_account": account,
            "jurisdiction": jurisdiction,
            "lodging_class": "hotel",
            "casino": False,
            "name": f"{kind.title()} {j}",
            "municipality": municipality,
            "room_count": rooms,
            "operator_id": f"op-{kind}-{j}",
            "registered_on": since,
            "statuses": [{"status": "active", "effective_from": since}],
        },  # fmt: skip
        subject=account,
    )


def long_account(j: int) -> str:
    return f"VI-{j + 3_000_000:07d}-2"


def long_account_events(j: int) -> list[CloudEvent]:
    account = long_account(j)
    out = [registered(account, "long", j, "VI", "St. Croix", 40, "2017-10-01")]
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
            await consume_setup(sm, "long-setup", setup)
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


# --------------------------------------------------------------------------- schedules

SCHEDULE_REGISTRY = "roomtax_bench_schedule_registry"
SCHEDULE_RUN = "roomtax_bench_schedule_run"
TREE_PACKAGES = (
    "services/assessment",
    "services/filing",
    "services/distribution",
    "libs/servicekit",
    "libs/taxcore",
)


async def _admin(*statements: str) -> list[object]:
    """Run ``statements`` on the server's ``postgres`` database; each one's first value."""
    conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
    try:
        return [await conn.fetchval(stmt) for stmt in statements]
    finally:
        await conn.close()


async def kept_template(name: str, what: str) -> bool:
    """Whether the template database ``name`` (of ``what``) is there, kept from a former run."""
    (found,) = await _admin(f"SELECT count(*) FROM pg_database WHERE datname = '{name}'")
    if found:
        print(f"{what}: kept template {name}", flush=True)
    return bool(found)


async def schedule_registry(lodgings: int) -> str:
    """The template database: ``lodgings`` PR lodgings registered through the registry consumer
    (this checkout's code). Made once under another name and renamed when complete, so a kept
    one is whole; its name says its size."""
    name = test_database_name(f"{SCHEDULE_REGISTRY}_{lodgings}")
    if await kept_template(name, f"registry of {lodgings} lodgings"):
        return name
    t = time.perf_counter()
    url = await fresh_database(f"{SCHEDULE_REGISTRY}_building", MIGRATIONS)
    # the set-up's statements planned with their parameters (the registry consumer's generic
    # plans, costed on the empty tables, scan them whole: a set-up slower with every lodging)
    settings = {"application_name": "bench-schedule-registry", "plan_cache_mode": "force_custom_plan"}
    engine = create_async_engine(url, pool_size=2, connect_args={"server_settings": settings})
    sm = make_sessionmaker(engine, service="assessment")
    runtime = Runtime.from_environment()
    attach(sm, BalanceCache(law=runtime.law), runtime)
    try:
        await consume(sm, "setup", [lodging_event(i) for i in range(lodgings)], BATCH_SIZE)
    finally:
        await engine.dispose()
    building = test_database_name(f"{SCHEDULE_REGISTRY}_building")
    await _admin(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
    print(f"registry of {lodgings} lodgings made in {time.perf_counter() - t:.0f} s: {name}", flush=True)
    return name


async def schedule_child(events: int, registry: str) -> None:
    """One schedule of ``events`` rows through the filing consumer, on a copy of ``registry``;
    prints its figures as one ``RESULT`` line of JSON."""
    run = test_database_name(SCHEDULE_RUN)
    await _admin(
        f'DROP DATABASE IF EXISTS "{run}" WITH (FORCE)', f'CREATE DATABASE "{run}" TEMPLATE "{registry}"'
    )
    engine = make_engine(database_url(run), application_name="bench-schedule", pool_size=2)
    sm = make_sessionmaker(engine, service="assessment")
    runtime = Runtime.from_environment()
    attach(sm, BalanceCache(law=runtime.law), runtime)
    try:
        declarations = [declaration_event(i)[0] for i in range(events)]
        settle = getattr(cli, "settle_heap", None)
        if settle is not None:
            settle()
        load = os.getloadavg()[0]
        polls: list[tuple[float, float]] = []
        rate, cpu = await consume(sm, "schedule", declarations, BATCH_SIZE, polls=polls)
    finally:
        await engine.dispose()
    tenth = max(1, len(polls) // 10)

    def per_event(part: list[tuple[float, float]]) -> float:
        return sum(a + b for a, b in part) / (len(part) * POLL) * 1e6

    result = {
        "seconds": events / rate,
        "cpu": cpu,
        "db": sum(b for _, b in polls) / events * 1e6,
        "first": per_event(polls[:tenth]),
        "last": per_event(polls[-tenth:]),
        "load": max(load, os.getloadavg()[0]),
    }
    print("RESULT " + json.dumps(result), flush=True)


SCHEDULE_FIGURES = ("seconds", "cpu", "db", "first", "last")


def schedules(sizes: list[int], repeats: int, trees: list[tuple[str, Path]], lodgings: int) -> None:
    """Each size's schedule from each tree, one child process each, interleaved; medians."""
    registry = asyncio.run(schedule_registry(max(lodgings, *sizes)))
    seen: dict[tuple[str, int], list[dict[str, float]]] = {}
    for round_no in range(1, repeats + 1):
        for n in sizes:
            for name, tree in trees:
                env = dict(os.environ, PYTHONPATH=":".join(str(tree / p) for p in TREE_PACKAGES))
                now = f"{datetime.now(UTC):%H:%M:%S}"
                print(f"=== round {round_no}, {n} rows, {name} ({tree}) {now} load {os.getloadavg()[0]:.1f}")
                args = ["--schedule-child", registry, "--events", str(n)]
                command = [sys.executable, "-u", str(Path(__file__).resolve()), *args]
                out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
                line = next(x for x in out.splitlines() if x.startswith("RESULT "))
                figures = json.loads(line.removeprefix("RESULT "))
                seen.setdefault((name, n), []).append(figures)
                print(
                    f"    {figures['seconds']:.1f} s, CPU {figures['cpu']:.0f} us/declaration "
                    f"(PostgreSQL {figures['db']:.0f}), first tenth {figures['first']:.0f}, "
                    f"last tenth {figures['last']:.0f}; load up to {figures['load']:.1f}",
                    flush=True,
                )
    print(f"\nschedules, medians of {repeats} interleaved rounds, load now {os.getloadavg()[0]:.1f}")
    columns = (
        "rows",
        "tree",
        "seconds",
        "CPU us/declaration",
        "of it PostgreSQL",
        "first tenth",
        "last tenth",
    )
    print("| " + " | ".join(columns) + " | x smallest |")
    print("|---|---|---|---|---|---|---|---|")
    med = {k: {f: statistics.median(r[f] for r in v) for f in SCHEDULE_FIGURES} for k, v in seen.items()}
    for n in sizes:
        for name, _ in trees:
            m = med[(name, n)]
            growth = m["cpu"] / med[(name, sizes[0])]["cpu"]
            print(
                f"| {n:,} | {name} | {m['seconds']:.1f} | {m['cpu']:.0f} | {m['db']:.0f} "
                f"| {m['first']:.0f} | {m['last']:.0f} | {growth:.2f} |"
            )
    first = trees[0][0]
    for name, _ in trees[1:]:
        for n in sizes:
            a, b = med[(first, n)], med[(name, n)]
            print(
                f"{first}/{name} at {n:,} rows: seconds {a['seconds'] / b['seconds']:.3f}, "
                f"CPU {a['cpu'] / b['cpu']:.3f}"
            )


# --------------------------------------------------------------------------- wide accounts

#: ``_op``: its summaries with their operator (:func:`consume_setup`; the template before stored
#: them without, so a run's first batch of each account rewrote them all)
WIDE_TEMPLATE = "roomtax_bench_wide_op"
WIDE_RUN = "roomtax_bench_wide_run"
WIDE_FIRST = Period(2013, 1)  # the first declared period of every wide account


def wide_account(j: int) -> str:
    return f"PR-{j + 5_000_000:07d}-1"


def wide_declaration(j: int, period: Period, version: int = 1) -> CloudEvent:
    """Account ``j``'s declaration of ``period`` (its ``version``: 2 supersedes the first), filed
    on the due date by the operator (as a PMS files: the lag bench's returns), with the period's
    own revenue (seeded by account, period and version)."""
    rng = random.Random(f"{j}|{period}|{version}")
    inp = DeclarationInput(
        jurisdiction="PR", lodging_class="hotel", period=str(period),
        room_revenue=Decimal(rng.randrange(5_000, 80_000)), room_nights=rng.randrange(10, 400),
    )  # fmt: skip
    account = wide_account(j)
    filer = {"filer_kind": "operator", "filer_id": f"op-wide-{j}", "schedule_id": None}
    ids = {"declaration_id": bench_id("wide", j, period, version), "filing_id": bench_id("wide-f", j, period)}
    event = declaration_filed(inp, account=account, lodging_id=f"l-wide-{j}", **ids, **filer)[0]
    if version > 1:
        first = bench_id("wide", j, period, version - 1)
        event = event.model_copy(update={"data": event.data | {"version": version, "supersedes": first}})
    return event


def wide_setup_events(j: int, periods: int) -> list[CloudEvent]:
    account = wide_account(j)
    lodging = registered(account, "wide", j, "PR", "San Juan", 60, "2012-12-01")
    out, period = [lodging], WIDE_FIRST
    for _ in range(periods):
        out.append(wide_declaration(j, period))
        period = period.next()
    return out


def wide_events(accounts: int, periods: int, *, amend: bool, wave: int) -> list[CloudEvent]:
    """One event per account: its next period's declaration (``wave`` 0 the first after the
    template's ``periods``, 1 the one after), or a new version of a past period (each wave
    another)."""
    if amend:
        half = periods // 2
        return [
            wide_declaration(j, WIDE_FIRST.add_months(half + (j + wave * 7) % half), 2)
            for j in range(accounts)
        ]
    return [wide_declaration(j, WIDE_FIRST.add_months(periods + wave)) for j in range(accounts)]


def tree_migrations() -> Path:
    """The migrations of the source tree this process runs (``assessment`` on its path)."""
    return Path(assessment.__file__).resolve().parent.parent / "migrations"


async def wide_template(accounts: int, periods: int) -> str:
    """The template database of the wide accounts (kept between runs; its name says its shape),
    made by this process's source tree (:func:`wide`: the oldest tree given)."""
    name = test_database_name(f"{WIDE_TEMPLATE}_{accounts}x{periods}")
    if await kept_template(name, f"{accounts} accounts x {periods} periods"):
        return name
    t = time.perf_counter()
    url = await fresh_database(f"{WIDE_TEMPLATE}_building", tree_migrations())
    engine = make_engine(url, application_name="bench-wide-setup", pool_size=2)
    sm = make_sessionmaker(engine, service="assessment")
    runtime = Runtime.from_environment()
    attach(sm, BalanceCache(law=runtime.law), runtime)
    try:  # account by account: a batch recomputes one or two accounts
        await consume_setup(sm, "setup", [e for j in range(accounts) for e in wide_setup_events(j, periods)])
    finally:
        await engine.dispose()
    building = test_database_name(f"{WIDE_TEMPLATE}_building")
    await _admin(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
    print(
        f"{accounts} accounts x {periods} periods made in {time.perf_counter() - t:.0f} s: {name}", flush=True
    )
    return name


async def wide_child(template: str, accounts: int, periods: int, *, amend: bool) -> None:
    """On a copy of ``template`` migrated to this tree's head: the no-op baseline, then two waves
    of the wide events (one event per account each), both measured: the first recomputes
    accounts this process has not seen and the tree's code has not written (as after a
    deployment), the second is the worker's steady state. One ``RESULT`` line."""
    run = test_database_name(WIDE_RUN)
    await _admin(
        f'DROP DATABASE IF EXISTS "{run}" WITH (FORCE)', f'CREATE DATABASE "{run}" TEMPLATE "{template}"'
    )
    # this tree's migrations (the template is at the head of the checkout that made it)
    await asyncio.to_thread(upgrade, tree_migrations(), database_url(run))
    engine = make_engine(database_url(run), application_name="bench-wide", pool_size=2)
    sm = make_sessionmaker(engine, service="assessment")
    runtime = Runtime.from_environment()
    attach(sm, BalanceCache(law=runtime.law), runtime)
    try:
        waves = [wide_events(accounts, periods, amend=amend, wave=w) for w in range(2)]
        settle = getattr(cli, "settle_heap", None)
        if settle is not None:
            settle()
        load = os.getloadavg()[0]
        renamed = [e.model_copy(update={"id": bench_id("wide-noop", i)}) for i, e in enumerate(waves[0])]
        base_rate, base_cpu = await consume(sm, "noop", renamed, 1, noop)
        result: dict[str, float] = {"base_rate": base_rate, "base_cpu": base_cpu}
        for w, events in enumerate(waves):
            polls: list[tuple[float, float]] = []
            rate, cpu = await consume(sm, f"wide-{w}", events, BATCH_SIZE, polls=polls)
            db = sum(b for _, b in polls) / len(events) * 1e6
            result |= {f"rate{w}": rate, f"cpu{w}": cpu, f"db{w}": db}
    finally:
        await engine.dispose()
    result["load"] = max(load, os.getloadavg()[0])
    print("RESULT " + json.dumps(result), flush=True)


WIDE_FIGURES = ("rate0", "cpu0", "db0", "rate1", "cpu1", "db1", "base_rate", "base_cpu")


def wide(args: argparse.Namespace, trees: list[tuple[str, Path]]) -> None:
    """Each tree's wide events in a child process, trees interleaved, ``--repeats`` rounds."""
    accounts, periods = args.wide_accounts, args.wide_periods
    # made by the last tree (the oldest: its schema is the one every tree can migrate from)
    maker = trees[-1][1]
    env = dict(os.environ, PYTHONPATH=":".join(str(maker / p) for p in TREE_PACKAGES))
    shape = ["--wide-accounts", str(accounts), "--wide-periods", str(periods)]
    command = [sys.executable, "-u", str(Path(__file__).resolve()), "--wide-template", *shape]
    made = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    print(made.strip(), f"(by {trees[-1][0]}: {maker})", flush=True)
    template = test_database_name(f"{WIDE_TEMPLATE}_{accounts}x{periods}")
    seen: dict[str, list[dict[str, float]]] = {}
    for round_no in range(1, args.repeats + 1):
        for name, tree in trees:
            env = dict(os.environ, PYTHONPATH=":".join(str(tree / p) for p in TREE_PACKAGES))
            now = f"{datetime.now(UTC):%H:%M:%S}"
            print(f"=== round {round_no}, {name} ({tree}) {now} load {os.getloadavg()[0]:.1f}", flush=True)
            child = [
                "--wide-child",
                template,
                "--wide-accounts",
                str(accounts),
                "--wide-periods",
                str(periods),
            ]
            child += ["--wide-amend"] if args.wide_amend else []
            command = [sys.executable, "-u", str(Path(__file__).resolve()), *child]
            out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            line = next(x for x in out.splitlines() if x.startswith("RESULT "))
            f = json.loads(line.removeprefix("RESULT "))
            seen.setdefault(name, []).append(f)
            print(
                f"    first wave {f['rate0']:.1f} events/s, CPU {f['cpu0']:.0f} us/event (PostgreSQL "
                f"{f['db0']:.0f}); second {f['rate1']:.1f}/s, {f['cpu1']:.0f} us "
                f"(PostgreSQL {f['db1']:.0f}); "
                f"no-op baseline {f['base_rate']:.0f}/s {f['base_cpu']:.0f} us; load up to {f['load']:.1f}",
                flush=True,
            )
    if not seen:
        return  # --repeats 0: the template only
    shape = "a past period's second version" if args.wide_amend else "the next period"
    print(
        f"\n{accounts} accounts x {periods} periods, one event each ({shape}), batches of {BATCH_SIZE}; "
        f"medians of {args.repeats} interleaved rounds, load now {os.getloadavg()[0]:.1f}"
    )
    print(
        "| tree | wave | events/s | ratio to no-op | CPU us/event | of it PostgreSQL "
        "| no-op events/s | no-op CPU us/event |"
    )
    print("|---|---|---|---|---|---|---|---|")
    med = {k: {f: statistics.median(r[f] for r in v) for f in WIDE_FIGURES} for k, v in seen.items()}
    for name, _ in trees:
        m = med[name]
        for w, label in enumerate(("first (new process, just migrated)", "second (steady)")):
            print(
                f"| {name} | {label} | {m[f'rate{w}']:.1f} | {m[f'rate{w}'] / m['base_rate']:.3f} "
                f"| {m[f'cpu{w}']:.0f} | {m[f'db{w}']:.0f} | {m['base_rate']:.0f} | {m['base_cpu']:.0f} |"
            )
    first = trees[0][0]
    for name, _ in trees[1:]:
        a, b = med[first], med[name]
        for w in range(2):
            print(
                f"wave {w + 1}: {first}/{name} events/s x{a[f'rate{w}'] / b[f'rate{w}']:.2f}, "
                f"CPU per event {name}/{first} x{b[f'cpu{w}'] / a[f'cpu{w}']:.2f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000, help="per round and mode; 0: skip fresh accounts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--long-accounts", type=int, default=10)
    parser.add_argument("--long-events", type=int, default=300)
    parser.add_argument("--batched-only", action="store_true", help="skip one event per transaction")
    parser.add_argument("--operator-returns", action="store_true", help="PMS returns, not schedule rows")
    parser.add_argument("--schedule", type=int, nargs="+", help="schedules of these many rows only")
    parser.add_argument(
        "--tree",
        type=_tree,
        action="append",
        default=[],
        help="--schedule, --wide-accounts: NAME=DIR of another tree",
    )
    parser.add_argument(
        "--registry",
        type=int,
        default=0,
        help="--schedule: lodgings of the registry (default: the largest size)",
    )
    parser.add_argument("--wide-accounts", type=int, default=0, help="wide accounts only: this many")
    parser.add_argument(
        "--wide-periods", type=int, default=150, help="--wide-accounts: declared periods each"
    )
    parser.add_argument("--wide-amend", action="store_true", help="--wide-accounts: amend a past period")
    parser.add_argument("--wide-child", help=argparse.SUPPRESS)
    parser.add_argument("--wide-template", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--schedule-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.schedule_child:
        asyncio.run(schedule_child(args.events, args.schedule_child))
    elif args.wide_template:
        asyncio.run(wide_template(args.wide_accounts, args.wide_periods))
    elif args.wide_child:
        asyncio.run(wide_child(args.wide_child, args.wide_accounts, args.wide_periods, amend=args.wide_amend))
    elif args.wide_accounts:
        wide(args, [("after", Path(__file__).resolve().parent.parent), *args.tree])
    elif args.schedule:
        here = ("after", Path(__file__).resolve().parent.parent)
        schedules(args.schedule, args.repeats, [here, *args.tree], args.registry)
    else:
        asyncio.run(main(args))
