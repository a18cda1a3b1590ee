"""Event lag across the real platform: filing commit -> assessment liability posted.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/bench_event_lag.py [--rates 10,20,40] [--seconds 30]

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

Also reports, per rate, the rate actually reached, the p50/p99/max lag, and the lag's
trend (median lag of the run's last fifth minus its first fifth: growth means the
consumer falls behind). Baseline, same run: ``--rates`` starts with a low rate whose p50
shows the idle path (relay wake-up, broker, poll); ratios are against it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from datetime import date
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from platform_harness import Api, Platform, eventually, new_client  # noqa: E402

from servicekit.testing import database_url  # noqa: E402
from taxcore.periods import Period  # noqa: E402

REGISTERED = date(2014, 1, 1)


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


async def load(
    api: Api, slots: list[tuple[str, str]], rate: float, seconds: float
) -> tuple[list[str], float]:
    """POST one declaration per slot at ``rate`` per second; returns their ids and the rate reached."""
    ids: list[str] = []
    tasks: set[asyncio.Task[None]] = set()
    sem = asyncio.Semaphore(64)

    async def post(account: str, period: str) -> None:
        async with sem:
            body = {
                "lodging": account,
                "period": period,
                "room_revenue": "1000.00",
                "room_nights": 5,
                "declared": {"tax": "90.00"},
            }
            r = await api.call("POST", "filing", "/v1/declarations", json=body)
            if r.status_code != 201:
                raise AssertionError(f"{r.status_code} {r.text}")
            ids.append(r.json()["id"])

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
    return ids, count / (time.monotonic() - start)


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
        posted = dict(
            await assessment.fetch(
                "SELECT declaration_id, extract(epoch FROM created_at)::float8 FROM liabilities "
                "WHERE declaration_id = ANY($1::text[])",
                ids,
            )
        )
        # the span of one transaction: rows sharing a created_at were applied in one batch
        by_tx: dict[float, int] = {}
        for t in posted.values():
            by_tx[t] = by_tx.get(t, 0) + 1
        out = sorted((filed[i], posted[i] - filed[i]) for i in ids)
        return out, max(by_tx.values())
    finally:
        await filing.close()
        await assessment.close()


async def main(args: argparse.Namespace) -> None:
    rates = [float(r) for r in args.rates.split(",")]
    platform = Platform(prefix="roomtax_bench_lag")
    try:
        await platform.start()
        admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
        api, accounts = await register(platform, admin, args.lodgings)
        last = Period.of(date.today()).prev()
        periods: list[str] = []
        p = Period.of(REGISTERED)
        while p <= last:
            periods.append(str(p))
            p = p.next()
        slots = [(a, per) for per in periods for a in accounts]
        slots.reverse()
        need = int(sum(rates) * args.seconds) + 50
        assert len(slots) >= need, f"{len(slots)} lodging-periods for {need} declarations: more --lodgings"
        print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
        print(f"{len(accounts)} lodgings, {len(periods)} periods each")
        await load(api, slots, 5, 4)  # warm-up (pools, caches, consumer group joined)
        rows: list[dict[str, Any]] = []
        for rate in rates:
            ids, reached = await load(api, slots, rate, args.seconds)
            per, biggest = await lags(platform, ids, timeout=600)
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
            }
            rows.append(row)
            print(
                f"rate {rate:5.0f}/s (reached {reached:5.1f}/s, {len(values)} declarations): lag p50 "
                f"{row['p50']:7.0f} ms  p99 {row['p99']:7.0f} ms  max {row['max']:7.0f} ms  "
                f"trend {trend:+7.0f} ms  largest batch {biggest}",
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
                f"| {r['rate']:.0f}/s ({r['reached']:.1f}) | {r['n']} | {r['p50']:.0f} | {r['p99']:.0f} "
                f"| {r['max']:.0f} | {r['trend']:+.0f} | {r['p50'] / base:.2f} |"
            )
        await api.close()
        await admin.close()
    finally:
        platform.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", default="5,20,40")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--lodgings", type=int, default=40)
    asyncio.run(main(parser.parse_args()))
