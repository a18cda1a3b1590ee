"""Throughput of the distribution service on a real PostgreSQL.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/bench_distribution.py [--events 3000] [--repeats 3]
        [--tree DIR]

Builds a scratch database (alembic head) and applies ``collection.posted`` events through
``EventConsumer.handle_records``, the path ``EventConsumer.run`` takes for what a poll
brings (500 records of one partition at a time), with the consumer the service runs
(``distribution.consumers``: its handler, its ``batch_size``):

* **collections**: the real handler (inbox, journal entry of two lines, collection row), on the
  consumer the service builds (``distribution.consumers.collections_consumer``, where the tree has
  it: its ``parse_contracts``);
* **baseline, same run**: the same consumer with a no-op handler (inbox rows and the
  transactions only).

Both in batches (the service's ``batch_size``) and one event per transaction, interleaved,
``--repeats`` rounds on disjoint events; prints events/s and the CPU per event (this
process plus the database's backends, from /proc: steadier than events/s on a loaded
machine), medians, and the ratios to the baseline (the goal: within 2x). Then posts a PR
month's run over all the collections through the HTTP API in-process and prints its
latency. The scratch database is dropped.

``--tree DIR`` compares this checkout with another one (``git archive <commit> | tar -x -C
DIR``): each round runs once per tree, alternating which goes first, each in a process of its
own whose ``distribution``, ``servicekit`` and ``taxcore`` (and migrations) come from that tree,
on a scratch database of its own, after a warm-up batch per mode; then the medians per tree
and the ratios after / before.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import asyncpg
from aiokafka import ConsumerRecord
from httpx import AsyncClient, Response
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from distribution import consumers as service_consumers
from distribution.app import build_app
from distribution.consumers import BATCH_SIZE
from distribution.ledger.handlers import COLLECTION_POSTED, on_collection_posted
from distribution.settings import DistributionSettings
from servicekit import cli
from servicekit.consumer import AnyHandler, EventConsumer
from servicekit.testing import auth, database_url, fresh_database, running_app, test_database_name
from taxcore.events import CloudEvent
from taxcore.parameters import default_tree

ROOT = Path(__file__).resolve().parent.parent
#: the service's ``collection.posted`` consumer (its options: ``parse_contracts``), where the tree
#: has it (session 12); before, the real handler's consumer is built here as the no-op's is
service_consumer = getattr(service_consumers, "collections_consumer", None)
DB = "roomtax_bench_distribution"
POLL = 500  # records per partition per poll (EventConsumer.run's max_records)


def event(i: int) -> CloudEvent:
    account = f"PR-{i % 500:05d}"
    return CloudEvent(
        id=str(uuid.uuid4()),
        source="/roomtax/assessment",
        type=COLLECTION_POSTED,
        time=datetime.now(UTC),
        subject=account,
        data={
            "posting_id": f"bench-{i}",
            "payment_id": f"pay-{i}",
            "tax_account": account,
            "jurisdiction": "PR",
            "lodging_class": "hotel",
            "period": "2026-06",
            "component": "tax" if i % 10 else "penalty",
            "amount": f"{1000 + i % 997}.{i % 100:02d}",
            "collected_on": date(2026, 7, 1 + i % 28).isoformat(),
            "section": "§28",
        },
    )


def records(events: Sequence[CloudEvent]) -> list[ConsumerRecord[bytes, bytes]]:
    values = [(e.subject or "").encode() for e in events], [e.model_dump_json().encode() for e in events]
    return [
        ConsumerRecord("collections", 0, i, 0, 0, key, value, None, len(key), len(value), ())
        for i, (key, value) in enumerate(zip(*values, strict=True))
    ]


async def nothing(session: AsyncSession, e: CloudEvent) -> None:
    return None


def backend_cpu(pids: Sequence[int]) -> float:
    """CPU seconds the PostgreSQL backends ``pids`` have run (/proc/<pid>/schedstat, in ns: the
    clock ticks of /proc/<pid>/stat, 10 ms, came to 3 us per event over a round of 3,000)."""
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        except OSError:
            continue
    return total / 1e9


async def backends(sm: async_sessionmaker[AsyncSession]) -> list[int]:
    """The backends of the pool's connections (and of any other client of the database)."""
    async with sm() as session:
        rows = await session.execute(
            text(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
        return [int(pid) for pid in rows.scalars()] + [
            int(await session.scalar(text("SELECT pg_backend_pid()")))
        ]


async def consume(
    sm: async_sessionmaker[AsyncSession],
    name: str,
    events: Sequence[CloudEvent],
    batch: int,
    handler: AnyHandler,
) -> tuple[float, float, float]:
    """Events per second through ``handle_records``, a poll's worth at a time, the CPU
    microseconds per event of this process and the database's backends, and of the backends."""
    consumer = EventConsumer(
        name=name,
        bootstrap="unused:0",
        topics=[],
        sessionmaker=sm,
        handlers={COLLECTION_POSTED: handler},
        batch_size=batch,
        max_attempts=1,
    )
    if handler is on_collection_posted and service_consumer is not None:  # as the service builds it
        consumer = service_consumer(sm, bootstrap="unused:0", runtime=None, max_attempts=1)
        consumer.name, consumer.batch_size = name, batch
    recs = records(events)
    pids = await backends(sm)
    cpu, db_cpu, t = time.process_time(), backend_cpu(pids), time.perf_counter()
    for start in range(0, len(recs), POLL):
        await consumer.handle_records(recs[start : start + POLL])
    seconds = time.perf_counter() - t
    cpu, db_cpu = time.process_time() - cpu, backend_cpu(pids) - db_cpu
    assert (consumer.applied, consumer.parked) == (len(events), 0), (consumer.applied, consumer.parked)
    return len(events) / seconds, (cpu + db_cpu) / len(events) * 1e6, db_cpu / len(events) * 1e6


Results = dict[str, list[tuple[float, float, float]]]


def modes(args: argparse.Namespace) -> list[tuple[str, int, AnyHandler]]:
    out: list[tuple[str, int, AnyHandler]] = [
        (f"collections-{BATCH_SIZE}", BATCH_SIZE, on_collection_posted),
        (f"no-op-{BATCH_SIZE}", BATCH_SIZE, nothing),
    ]
    if not args.batched_only:
        out += [("collections-1", 1, on_collection_posted), ("no-op-1", 1, nothing)]
    return out


async def rounds(
    sm: async_sessionmaker[AsyncSession], args: argparse.Namespace, *, warm_up: bool = False
) -> Results:
    """``args.repeats`` interleaved rounds of every mode, on disjoint events."""
    results: Results = {}
    default_tree()  # the law's parameters load once per process, not in a round
    cli.settle_heap()  # as the worker does once started: what start-up left alive, out of the GC's walks
    k = 10_000_000
    if warm_up:  # a process's first batches (plans, caches) are not measured
        for label, batch, handler in modes(args):
            await consume(sm, f"warm-{label}", [event(k + i) for i in range(batch)], batch, handler)
            k += batch
    k = 0
    for rep in range(args.repeats):
        for label, batch, handler in modes(args) if rep % 2 == 0 else modes(args)[::-1]:
            count = args.events if batch > 1 else args.single_events
            evs = [event(k + i) for i in range(count)]
            k += count
            results.setdefault(label, []).append(await consume(sm, f"{label}-{rep}", evs, batch, handler))
        if not args.child:
            print(
                f"round {rep + 1}: "
                + ", ".join(
                    f"{m} {v[-1][0]:.0f}/s {v[-1][1]:.0f} us CPU ({v[-1][2]:.0f} db)"
                    for m, v in results.items()
                )
            )
    return results


def table(results: Results, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """Prints the medians and the ratios to the baseline; returns ``{batch: (rate ratio, CPU)}``."""
    rate = {m: statistics.median(r for r, _, _ in v) for m, v in results.items()}
    cpu = {m: statistics.median(c for _, c, _ in v) for m, v in results.items()}
    db = {m: statistics.median(d for _, _, d in v) for m, v in results.items()}
    print(
        f"\n| medians of {len(next(iter(results.values())))} rounds | collections: events/s, CPU us/event "
        "(of it the database's) | no-op baseline | events/s ratio no-op / real | CPU ratio real / no-op |"
    )
    print("|---|---|---|---|---|")
    out = {}
    for batch in (BATCH_SIZE, 1):
        if f"collections-{batch}" in rate:
            real, base = f"collections-{batch}", f"no-op-{batch}"
            out[str(batch)] = (rate[base] / rate[real], cpu[real])
            print(
                f"| {batch} per transaction ({args.events if batch > 1 else args.single_events} events) "
                f"| {rate[real]:,.0f}/s, {cpu[real]:.0f} us ({db[real]:.0f}) "
                f"| {rate[base]:,.0f}/s, {cpu[base]:.0f} us ({db[base]:.0f}) "
                f"| **{rate[base] / rate[real]:.2f}x** | {cpu[real] / cpu[base]:.2f}x |"
            )
    return out


async def main(args: argparse.Namespace) -> None:
    tree = Path(args.child or ROOT)
    name = f"{DB}_child" if args.child else DB
    url = await fresh_database(name, tree / "services/distribution/migrations")
    app = build_app(DistributionSettings(environment="test", database_url=url))
    if not args.child:
        print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
    try:
        async with running_app(app) as client:
            results = await rounds(app.state.sessionmaker, args, warm_up=bool(args.child))
            if args.child:
                print("RESULTS " + json.dumps(results))
                return
            print(f"load after: {os.getloadavg()[0]:.1f}")
            table(results, args)
            await month_run(client)
    finally:
        conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
        await conn.execute(f'DROP DATABASE IF EXISTS "{test_database_name(name)}" WITH (FORCE)')
        await conn.close()


def compare(args: argparse.Namespace) -> None:
    """Rounds alternating between this checkout ("after") and ``args.tree`` ("before")."""
    trees = {"before": Path(args.tree).resolve(), "after": ROOT}
    results: dict[str, Results] = {"before": {}, "after": {}}
    passed = [
        f"--events={args.events}",
        f"--single-events={args.single_events}",
        "--repeats=1",
        *(["--batched-only"] if args.batched_only else []),
    ]
    for rep in range(args.repeats):
        order = ["before", "after"] if rep % 2 == 0 else ["after", "before"]
        for which in order:
            tree = trees[which]
            paths = [tree / "services/distribution", tree / "libs/servicekit", tree / "libs/taxcore"]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
            load = os.getloadavg()[0]
            out = subprocess.run(
                [sys.executable, "-u", __file__, f"--child={tree}", *passed],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            [line] = [x for x in out.splitlines() if x.startswith("RESULTS ")]
            for label, values in json.loads(line.removeprefix("RESULTS ")).items():
                results[which].setdefault(label, []).extend(tuple(v) for v in values)
            print(
                f"round {rep + 1} {which} (load {load:.1f}): "
                + ", ".join(
                    f"{m} {v[-1][0]:.0f}/s {v[-1][1]:.0f} us CPU ({v[-1][2]:.0f} db)"
                    for m, v in results[which].items()
                )
            )
    summary = {}
    for which in ("before", "after"):
        print(f"\n{which}: {trees[which]}")
        summary[which] = table(results[which], args)
    print(f"\nload after: {os.getloadavg()[0]:.1f}")
    for batch, (ratio, cpu) in summary["after"].items():
        was_ratio, was_cpu = summary["before"][batch]
        print(
            f"{batch} per transaction: no-op / real {was_ratio:.2f}x -> {ratio:.2f}x; "
            f"CPU per event {was_cpu:.0f} -> {cpu:.0f} us ({cpu / was_cpu:.2f}x)"
        )


async def post_july_run(client: AsyncClient) -> tuple[Response, float]:
    """The bank's FY2027 certification, then the PR 2026-07 run posted: the response and its seconds."""
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
    return r, took


async def month_run(client: AsyncClient) -> None:
    """A PR month's run over every collection booked, through the HTTP API."""
    admin = auth("agency-admin")
    r, took = await post_july_run(client)
    print(
        f"\nrun over {r.json()['inputs']['collections']} collections: {took * 1000:.0f} ms "
        f"(collected {r.json()['collected']})"
    )
    start = time.perf_counter()
    await client.get("/v1/runs", headers=admin)
    listing = time.perf_counter() - start
    print(f"  baseline: GET /v1/runs on the same app: {listing * 1000:.1f} ms; ratio {took / listing:.1f}")
    start = time.perf_counter()
    r = await client.get("/v1/funds", params={"jurisdiction": "PR"}, headers=admin)
    print(f"fund balances: {(time.perf_counter() - start) * 1000:.1f} ms, conserved={r.json()['conserved']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=3000, help="per round and mode")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--single-events", type=int, default=500, help="per round, one per transaction")
    parser.add_argument("--batched-only", action="store_true", help="skip one event per transaction")
    parser.add_argument("--tree", help="another checkout to compare with, round by round (before)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one tree's rounds, for --tree
    parsed = parser.parse_args()
    if parsed.tree:
        compare(parsed)
    else:
        asyncio.run(main(parsed))
