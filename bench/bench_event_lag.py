"""Event lag across the real platform: filing commit -> assessment liability posted.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/bench_event_lag.py \
        [--rates 5,half,max] [--seconds 120] [--filing-max measure|N]

Starts the four services as in the cross-service tests (``tests/platform_harness.py``:
an API and a worker process each, fresh databases, a real Tansu broker), registers
``--lodgings`` PR hotels through the registry API, waits until filing knows them, then
for each rate in ``--rates`` POSTs new declarations (every one a different lodging or
period) at that rate for ``--seconds`` and waits until assessment has a liability for
each. The lag of one declaration is ``liabilities.created_at`` (assessment) minus
``declarations.created_at`` (filing), both ``now()`` of their transactions on the same
PostgreSQL server, so one clock: the start of the filing transaction (a few ms before
its commit) to the start of the assessment transaction that applied the event (its
commit follows by that batch's time, reported as ``batch tx``).

The filing max: what ``POST /v1/declarations`` accepts with the whole platform running on
this machine (the consumers applying what it accepts). ``--filing-max measure`` (the
default) finds it first: ``--max-concurrency`` clients POST back to back for
``--max-seconds``; the declarations per second accepted is the max (that burst's lag is
printed, not a goal: it is a backlog). ``--filing-max N`` takes it as given (to compare
trees at one rate). In ``--rates``, ``max`` is that rate and ``half`` half of it.

Per rate: the rate reached, the p50/p99/max lag, the lag over time (p50/p99 of each
``--window`` seconds of filings) and its trend (median lag of the run's last fifth minus
its first fifth: growth means the consumer falls behind), and the hops (p50/p99): filing
tx start -> filing's relay claims the event (``outbox.published_at``: filing's
transaction, NOTIFY, the relay's wake-up), the claim -> assessment's transaction starts
(produce with acks=all, the broker, the consumer's fetch, batches ahead of it), and
assessment's transaction start -> its relay claims that transaction's events (the batch
transaction and the relay's wake-up). Baseline, same run: ``--rates`` starts with a low
rate whose p50 shows the idle path (relay wake-up, broker, poll); ratios are against it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import time
import uuid
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from platform_harness import Api, Platform, eventually, new_client  # noqa: E402

from servicekit.testing import database_url  # noqa: E402
from taxcore.periods import Period  # noqa: E402

REGISTERED = date(2014, 1, 1)
#: when assessment's transaction that applied each declaration started
POSTED = (
    "SELECT declaration_id, extract(epoch FROM created_at)::float8 FROM liabilities "
    "WHERE declaration_id = ANY($1::text[])"
)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def register(platform: Platform, admin: Api, n: int) -> tuple[Api, list[str]]:
    tag = uuid.uuid4().hex[:6]
    operator = await admin.post("registry", "/v1/operators", {"name": f"Lag Hotels {tag}"}, expect=201)
    api = await new_client(platform, admin, f"lag-{tag}", "operator", operator_id=operator["id"])
    sem = asyncio.Semaphore(1)  # one at a time: concurrent registrations race for account numbers (409)

    async def one(i: int) -> str:
        async with sem:
            body = {
                "jurisdiction": "PR",
                "lodging_class": "hotel",
                "name": f"Lag Hotel {i} {tag}",
                "address": {"line1": "1 Calle Luna", "municipality": "San Juan"},
                "room_count": 20,
                "operator_id": operator["id"],
                "registered_on": REGISTERED.isoformat(),
            }
            return str((await admin.post("registry", "/v1/lodgings", body, expect=201))["tax_account"])

    accounts = list(await asyncio.gather(*(one(i) for i in range(n))))

    async def known() -> bool:
        r = await api.call("GET", "filing", f"/v1/lodgings/{accounts[-1]}/periods/2014-01")
        return bool(r.status_code == 200)

    await eventually(known, timeout=300)
    return api, accounts


#: requests the filing API refused with 503 (no database connection came free in time: it sheds
#: load rather than queue without bound), per run of :func:`load` / :func:`flood`
REFUSED = {"count": 0}


class Poster:
    """POSTs declarations to filing over kept-alive HTTP/1.1 connections, the request written and
    the response read by hand. The bench shares this 2-core machine with the platform it loads:
    through httpx (``Api.call``) it spent ~6 ms of its own CPU per declaration (32 s of 120 in a
    minute at 84/s, session 13), half a core the platform did not get. A connection idle for
    ``idle`` seconds is closed, not reused (uvicorn closes its side after 5 s)."""

    def __init__(self, url: str, authorization: str, idle: float = 2.0) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.idle = parts.hostname or "127.0.0.1", parts.port or 80, idle
        self.head = (
            f"POST /v1/declarations HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: {authorization}\r\n"
            "Content-Type: application/json\r\nContent-Length: "
        ).encode()
        self.free: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def post(self, body: bytes) -> tuple[int, bytes]:
        """The response's status and body."""
        conn = None
        while self.free and conn is None:
            reader, writer, since = self.free.pop()  # the most recently used first
            if time.monotonic() - since < self.idle:
                conn = reader, writer
            else:
                writer.close()
        reader, writer = conn or await asyncio.open_connection(self.host, self.port)
        writer.write(self.head + str(len(body)).encode() + b"\r\n\r\n" + body)
        head = await reader.readuntil(b"\r\n\r\n")
        status, length, keep = int(head[9:12]), 0, True
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            match name.strip().lower():
                case b"content-length":
                    length = int(value)
                case b"connection":
                    keep = value.strip().lower() != b"close"
                case b"transfer-encoding":
                    raise AssertionError(f"a response in {value.strip().decode()} transfer: not read here")
        data = await reader.readexactly(length)
        if keep:
            self.free.append((reader, writer, time.monotonic()))
        else:
            writer.close()
        return status, data

    def close(self) -> None:
        for _, writer, _ in self.free:
            writer.close()
        self.free.clear()


async def declare(poster: Poster, account: str, period: str) -> str | None:
    """POST a PR declaration of 1000.00 room revenue for one lodging-period; its id, or None
    when the API refused it with 503 (counted in :data:`REFUSED`, the slot left unfiled)."""
    body = {
        "lodging": account,
        "period": period,
        "room_revenue": "1000.00",
        "room_nights": 5,
        "declared": {"tax": "90.00"},
    }
    status, data = await poster.post(json.dumps(body).encode())
    if status == 503:
        REFUSED["count"] += 1
        return None
    if status != 201:
        raise AssertionError(f"{status} {data.decode()}")
    return str(json.loads(data)["id"])


async def load(
    api: Poster, slots: list[tuple[str, str]], rate: float, seconds: float
) -> tuple[list[str], float]:
    """POST one declaration per slot at ``rate`` per second; returns their ids and the rate reached."""
    ids: list[str] = []
    tasks: set[asyncio.Task[None]] = set()
    sem = asyncio.Semaphore(64)

    async def post(account: str, period: str) -> None:
        async with sem:
            if (got := await declare(api, account, period)) is not None:
                ids.append(got)

    start = time.monotonic()
    count = int(rate * seconds)
    for k in range(count):
        delay = start + k / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(post(*slots.pop()))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    return ids, len(ids) / (time.monotonic() - start)  # accepted (201) per second


async def lags(platform: Platform, ids: list[str], timeout: float) -> tuple[list[tuple[float, float]], float]:
    """(filed at, lag seconds) per declaration once assessment applied all; the longest batch tx."""
    filing = await asyncpg.connect(database_url(f"{platform.prefix}_filing", driver="postgresql"))
    assessment = await asyncpg.connect(database_url(f"{platform.prefix}_assessment", driver="postgresql"))
    try:
        deadline = time.monotonic() + timeout
        while True:
            done = await assessment.fetchval(
                "SELECT count(*) FROM liabilities WHERE declaration_id = ANY($1::text[])", ids
            )
            if done == len(ids):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"assessment applied {done} of {len(ids)} in {timeout} s")
            await asyncio.sleep(0.5)
        filed = dict(
            await filing.fetch(
                "SELECT id, extract(epoch FROM created_at)::float8 FROM declarations "
                "WHERE id = ANY($1::text[])",
                ids,
            )
        )
        posted = dict(await assessment.fetch(POSTED, ids))
        # the span of one transaction: rows sharing a created_at were applied in one batch
        by_tx: dict[float, int] = {}
        for t in posted.values():
            by_tx[t] = by_tx.get(t, 0) + 1
        out = sorted((filed[i], posted[i] - filed[i]) for i in ids)
        return out, max(by_tx.values())
    finally:
        await filing.close()
        await assessment.close()


async def flood(
    api: Poster, slots: list[tuple[str, str]], concurrency: int, seconds: float
) -> tuple[list[str], float]:
    """``concurrency`` clients POST declarations back to back for ``seconds``; ids, the rate accepted."""
    ids: list[str] = []
    deadline = time.monotonic() + seconds

    async def client() -> None:
        while time.monotonic() < deadline:
            account, period = slots.pop()
            if (got := await declare(api, account, period)) is not None:
                ids.append(got)

    start = time.monotonic()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return ids, len(ids) / (time.monotonic() - start)


async def hops(platform: Platform, ids: list[str]) -> dict[str, list[float]]:
    """Seconds of each hop per declaration (see the module docstring), for declarations ``ids``."""
    filing = await asyncpg.connect(database_url(f"{platform.prefix}_filing", driver="postgresql"))
    assessment = await asyncpg.connect(database_url(f"{platform.prefix}_assessment", driver="postgresql"))
    try:
        rows = await filing.fetch(
            "SELECT extract(epoch FROM d.created_at)::float8 AS filed, "
            "extract(epoch FROM o.published_at)::float8 AS claimed, d.id FROM declarations AS d "
            "JOIN outbox AS o ON o.event_type = 'roomtax.filing.declaration.filed.v1' "
            "AND o.payload->'data'->>'declaration_id' = d.id WHERE d.id = ANY($1::text[])",
            ids,
        )
        posted = dict(await assessment.fetch(POSTED, ids))
        first = min(r["filed"] for r in rows)
        last = max(posted.values())
        # assessment's transactions of the run: their start (created_at of the events they
        # emitted) to its relay's claim of those events (after the commit)
        txs = await assessment.fetch(
            "SELECT DISTINCT extract(epoch FROM created_at)::float8 AS started, "
            "extract(epoch FROM min(published_at) OVER (PARTITION BY created_at))::float8 AS claimed "
            "FROM outbox WHERE created_at BETWEEN to_timestamp($1) AND to_timestamp($2)",
            first,
            last,
        )
        return {
            "filing tx -> filing relay claim": [r["claimed"] - r["filed"] for r in rows],
            "claim -> assessment tx start": [posted[r["id"]] - r["claimed"] for r in rows],
            "assessment tx -> its relay claim": [t["claimed"] - t["started"] for t in txs if t["claimed"]],
        }
    finally:
        await filing.close()
        await assessment.close()


def windows(per: list[tuple[float, float]], seconds: float) -> list[tuple[float, float, int]]:
    """(p50 ms, p99 ms, count) of the lags of each ``seconds`` of filings, in order."""
    if not per:
        return []
    start, out, chunk = per[0][0], [], []
    for filed, lag in per:
        if filed - start >= seconds and chunk:
            out.append((pct(chunk, 0.5), pct(chunk, 0.99), len(chunk)))
            start, chunk = start + seconds * ((filed - start) // seconds), []
        chunk.append(lag * 1000)
    out.append((pct(chunk, 0.5), pct(chunk, 0.99), len(chunk)))
    return out


def stop_on_sigterm() -> None:
    """SIGTERM (``kill``, ``pkill``) cancels the running bench as Ctrl-C does, so its ``finally``
    stops the platform: without it the interpreter exited at once and left the services, the
    broker and their databases running, to compete with (and connect to the recreated databases
    of) the next run (session 13)."""
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)


async def autovacuum(platform: Platform, every: float) -> None:
    """``VACUUM (ANALYZE)`` each service's database every ``every`` seconds: this machine's
    PostgreSQL runs with ``autovacuum = off`` (the CI's conf.d), a deployment with it on
    (docs/operations.md). Without statistics a prepared statement keeps the generic plan made
    when its table was a page: session 14's first run had filing's ``_FILING_CONTEXT`` on ~4
    backends at once at 250/s (PostgreSQL 1.3 of the 2 cores), its plan reading every return of
    the bench's one operator; an ANALYZE invalidates the plans of the table's statements.
    Unthrottled, each VACUUM of the assessment database stalled its consumer for seconds."""
    while True:
        await asyncio.sleep(every)
        for name in platform.services:
            conn = await asyncpg.connect(database_url(f"{platform.prefix}_{name}", driver="postgresql"))
            try:  # throttled as autovacuum is by default (a manual VACUUM is not)
                await conn.execute("SET vacuum_cost_delay = '2ms'; SET vacuum_cost_limit = 200")
                await conn.execute("VACUUM (ANALYZE)")
            finally:
                await conn.close()


async def main(args: argparse.Namespace) -> None:
    stop_on_sigterm()
    platform = Platform(prefix="roomtax_bench_lag")
    vacuum: asyncio.Task[None] | None = None
    try:
        await platform.start()
        if args.autovacuum > 0:
            vacuum = asyncio.create_task(autovacuum(platform, args.autovacuum))
            print(
                f"autovacuum stand-in: VACUUM (ANALYZE) of each database every {args.autovacuum:.0f} s, "
                "throttled as autovacuum (2 ms per 200 cost units)"
            )
        admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
        client, accounts = await register(platform, admin, args.lodgings)
        api = Poster(platform.url("filing"), client.headers["Authorization"])
        last = Period.of(date.today()).prev()
        periods: list[str] = []
        p = Period.of(REGISTERED)
        while p <= last:
            periods.append(str(p))
            p = p.next()
        slots = [(a, per) for per in periods for a in accounts]
        slots.reverse()
        print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
        print(f"{len(accounts)} lodgings, {len(periods)} periods each", flush=True)
        await load(api, slots, 5, 4)  # warm-up (pools, caches, consumer group joined)
        if args.filing_max == "measure":
            ids, filing_max = await flood(api, slots, args.max_concurrency, args.max_seconds)
            per, _ = await lags(platform, ids, timeout=900)
            burst = [lag * 1000 for _, lag in per]
            print(
                f"filing max: {filing_max:.1f} declarations/s accepted by {args.max_concurrency} clients "
                f"in {args.max_seconds:.0f} s (load {os.getloadavg()[0]:.1f}); that backlog's lag p50 "
                f"{pct(burst, 0.5):.0f} ms, max {max(burst):.0f} ms",
                flush=True,
            )
        else:
            filing_max = float(args.filing_max)
            print(f"filing max: {filing_max:.1f} declarations/s (given)")
        named = {"max": filing_max, "half": filing_max / 2}
        rates = [named[r] if r in named else float(r) for r in args.rates.split(",")]
        need = int(sum(rates) * args.seconds) + 50
        assert len(slots) >= need, (
            f"{len(slots)} lodging-periods left for {need} declarations: more --lodgings"
        )
        rows: list[dict[str, Any]] = []
        for rate in rates:
            REFUSED["count"] = 0
            ids, reached = await load(api, slots, rate, args.seconds)
            per, biggest = await lags(platform, ids, timeout=900)
            values = [lag * 1000 for _, lag in per]
            fifth = max(1, len(values) // 5)
            trend = statistics.median(values[-fifth:]) - statistics.median(values[:fifth])
            row = {
                "rate": rate,
                "reached": reached,
                "n": len(values),
                "p50": pct(values, 0.50),
                "p99": pct(values, 0.99),
                "max": max(values),
                "trend": trend,
                "batch": biggest,
                "hops": await hops(platform, ids),
            }
            rows.append(row)
            print(
                f"rate {rate:5.1f}/s (reached {reached:5.1f}/s, {len(values)} declarations, load "
                f"{os.getloadavg()[0]:.1f}): lag p50 {row['p50']:7.0f} ms  p99 {row['p99']:7.0f} ms  "
                f"max {row['max']:7.0f} ms  trend {trend:+7.0f} ms  largest batch {biggest}"
                + (f"  refused (503) {REFUSED['count']}" if REFUSED["count"] else ""),
                flush=True,
            )
            for hop, secs in row["hops"].items():
                ms = [x * 1000 for x in secs]
                print(f"    {hop}: p50 {pct(ms, 0.5):.0f} ms, p99 {pct(ms, 0.99):.0f} ms", flush=True)
            over = windows(per, args.window)
            print(
                f"    over time (p50/p99 ms per {args.window:.0f} s): "
                + ", ".join(f"{a:.0f}/{b:.0f}" for a, b, _ in over),
                flush=True,
            )
        print(f"load after: {os.getloadavg()[0]:.1f}")
        base = rows[0]["p50"]
        print()
        print(
            "| rate (reached) | declarations | lag p50 ms | p99 ms | max ms | trend ms "
            "| p50 / lowest rate's p50 |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['rate']:.1f}/s ({r['reached']:.1f}) | {r['n']} | {r['p50']:.0f} | {r['p99']:.0f} "
                f"| {r['max']:.0f} | {r['trend']:+.0f} | {r['p50'] / base:.2f} |"
            )
        await client.close()
        api.close()
        await admin.close()
    finally:
        if vacuum is not None:
            vacuum.cancel()
            with contextlib.suppress(asyncio.CancelledError, asyncpg.PostgresError, OSError):
                await vacuum
        platform.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", default="5,half,max", help="per second; max, half: of the filing max")
    parser.add_argument("--seconds", type=float, default=120, help="of each rate's run")
    parser.add_argument("--lodgings", type=int, default=200, help="PR hotels registered (x periods = slots)")
    parser.add_argument("--filing-max", default="measure", help="declarations/s, or measure")
    parser.add_argument("--max-concurrency", type=int, default=16, help="clients measuring the filing max")
    parser.add_argument(
        "--autovacuum",
        type=float,
        default=30,
        help="seconds between VACUUM (ANALYZE) of each database (0: none; the machine's autovacuum is off)",
    )
    parser.add_argument("--max-seconds", type=float, default=20, help="of the filing max's measurement")
    parser.add_argument(
        "--window", type=float, default=20, help="seconds of filings per lag-over-time figure"
    )
    asyncio.run(main(parser.parse_args()))
