"""Payment lag across the real platform: filing commit -> distribution collection booked.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/bench_payment_lag.py [--rates 5,20,40] [--seconds 30]

The payment mode of ``bench_event_lag.py`` (whose platform, registration, declaration load
and percentiles it imports): starts the four services (``tests/platform_harness.py``),
registers ``--lodgings`` PR hotels, files one declaration per lodging-period the payments
will need (not measured) and waits until assessment has them all, then for each rate in
``--rates`` POSTs payments at that rate for ``--seconds``, each paying one declared
period's tax, and waits until distribution has booked a collection for each. A payment's
path: filing's outbox -> ``filing.payments`` -> assessment applies it and posts its
collections -> ``assessment.collections`` -> distribution books them. Its lag is the first
``collections.received_at`` of the payment (distribution) minus ``payments.created_at``
(filing): ``now()`` of the two transactions on the same PostgreSQL server, one clock.

Reports per rate the rate reached, p50/p99/max lag and its trend (median of the last fifth
minus the first fifth: growth means a consumer falls behind), and p50/p99 of each hop:
filing's transaction -> filing's relay claims the event (``outbox.published_at``) ->
assessment's ``payments`` row (its transaction's start) -> its first ``collection_postings``
row (the application) -> assessment's relay claims the first ``collection.posted`` (after
that transaction's commit) -> distribution's first ``collections`` row. Baseline, same run: the
lowest rate's p50 (the idle path: relays' wake-up, two broker hops, polls); ratios are
against it. The goal of issue 12: p99 <= 500 ms at 40 payments/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from datetime import date
from pathlib import Path
from typing import Any

import asyncpg
from bench_event_lag import REGISTERED, Poster, lags, load, pct, register, stop_on_sigterm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from platform_harness import Api, Platform  # noqa: E402

from servicekit.testing import database_url  # noqa: E402
from taxcore.periods import Period  # noqa: E402

TAX = "90.00"  # PR §24(B): 9% of the 1000.00 of room revenue bench_event_lag's declarations carry


async def paced(rate: float, seconds: float, send: Callable[[int], Coroutine[Any, Any, None]]) -> float:
    """Start ``send(k)`` for k = 0, 1, ... at ``rate`` per second for ``seconds``; the rate reached."""
    count, start = int(rate * seconds), time.monotonic()
    tasks = []
    for k in range(count):
        await asyncio.sleep(max(0.0, start + k / rate - time.monotonic()))
        tasks.append(asyncio.create_task(send(k)))
    await asyncio.gather(*tasks)
    return count / (time.monotonic() - start)


async def pay(api: Api, slots: list[tuple[str, str]], rate: float, seconds: float) -> tuple[list[str], float]:
    """POST one payment per slot (its period's tax) at ``rate``; their ids and the rate reached."""
    ids: list[str] = []
    sem = asyncio.Semaphore(64)

    async def send(k: int) -> None:
        account, period = slots.pop()
        body = {
            "tax_account": account,
            "amount": TAX,
            "method": "electronic_transfer",
            "periods": [{"period": period, "amount": TAX}],
        }
        async with sem:
            r = await api.call("POST", "filing", "/v1/payments", json=body)
        if r.status_code != 201:
            raise AssertionError(f"{r.status_code} {r.text}")
        ids.append(r.json()["id"])

    reached = await paced(rate, seconds, send)
    return ids, reached


# when each payment reached each stage: (database, query of (payment id, epoch seconds))
STAGES = [
    ("filing", "SELECT id, extract(epoch FROM created_at)::float8 FROM payments WHERE id = ANY($1::text[])"),
    (
        "filing",
        "SELECT payload->'data'->>'payment_id', extract(epoch FROM published_at)::float8 FROM outbox "
        "WHERE event_type = 'roomtax.filing.payment.received.v1' "
        "AND payload->'data'->>'payment_id' = ANY($1::text[])",
    ),
    (
        "assessment",
        "SELECT payment_id, extract(epoch FROM created_at)::float8 FROM payments "
        "WHERE payment_id = ANY($1::text[])",
    ),
    (
        "assessment",
        "SELECT payment_id, extract(epoch FROM min(created_at))::float8 FROM collection_postings "
        "WHERE payment_id = ANY($1::text[]) GROUP BY payment_id",
    ),
    (
        "assessment",
        "SELECT payload->'data'->>'payment_id', extract(epoch FROM min(published_at))::float8 FROM outbox "
        "WHERE event_type = 'roomtax.assessment.collection.posted.v1' "
        "AND payload->'data'->>'payment_id' = ANY($1::text[]) GROUP BY 1",
    ),
    (
        "distribution",
        "SELECT payment_id, extract(epoch FROM min(received_at))::float8 FROM collections "
        "WHERE payment_id = ANY($1::text[]) GROUP BY payment_id",
    ),
]
HOPS = [
    "filing tx -> filing relay claim",
    "claim -> assessment applies",
    "applied -> collection posted",
    "posted (tx start) -> assessment relay claim",
    "claim -> distribution books",
]


async def collection_lags(platform: Platform, ids: list[str], timeout: float) -> list[list[float]]:
    """Per payment, in the order paid, once distribution booked each: the whole lag in seconds,
    then the time of each of the ``HOPS``."""
    conns = {
        name: await asyncpg.connect(database_url(f"{platform.prefix}_{name}", driver="postgresql"))
        for name in ("filing", "assessment", "distribution")
    }
    try:
        deadline = time.monotonic() + timeout
        while len(booked := await conns["distribution"].fetch(STAGES[-1][1], ids)) < len(ids):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"distribution booked {len(booked)} of {len(ids)} payments in {timeout} s"
                )
            await asyncio.sleep(0.5)
        at = [dict(await conns[db].fetch(sql, ids)) for db, sql in STAGES]
        order = sorted(ids, key=at[0].__getitem__)
        return [
            [at[-1][i] - at[0][i], *(b[i] - a[i] for a, b in zip(at, at[1:], strict=False))] for i in order
        ]
    finally:
        for conn in conns.values():
            await conn.close()


async def main(args: argparse.Namespace) -> None:
    stop_on_sigterm()
    platform = Platform(prefix="roomtax_bench_paylag")
    try:
        await platform.start()
        await measure(platform, [float(r) for r in args.rates.split(",")], args)
    finally:
        platform.stop()


async def measure(platform: Platform, rates: list[float], args: argparse.Namespace) -> None:
    """Declarations to pay, then one run of payments per rate; prints each run and the table."""
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    api, accounts = await register(platform, admin, args.lodgings)
    need = int(sum(rates) * args.seconds) + 5 * 4  # the runs and the warm-up
    periods: list[str] = []
    p = Period.of(REGISTERED)
    while len(periods) * len(accounts) < need:
        periods.append(str(p))
        p = p.next()
    assert p <= Period.of(date.today()), "more --lodgings: not enough past periods for the payments"
    slots = [(a, per) for per in periods for a in accounts][:need]
    print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
    t = time.monotonic()
    declared = list(reversed(slots))
    poster = Poster(platform.url("filing"), api.headers["Authorization"])
    filed, _ = await load(poster, declared, args.setup_rate, len(slots) / args.setup_rate)
    poster.close()
    await lags(platform, filed, timeout=900)
    print(
        f"{len(accounts)} lodgings, {len(filed)} declarations filed and assessed "
        f"in {time.monotonic() - t:.0f} s"
    )
    slots.reverse()
    await pay(api, slots, 5, 4)  # warm-up (pools, caches, the consumer groups joined)
    rows: list[dict[str, Any]] = []
    for rate in rates:
        ids, reached = await pay(api, slots, rate, args.seconds)
        per = await collection_lags(platform, ids, timeout=900)
        values = [lags[0] * 1000 for lags in per]
        row = {"rate": rate, "reached": reached, **spread(values)}
        rows.append(row)
        print(
            f"rate {rate:5.0f}/s (reached {reached:5.1f}/s, {row['n']} payments): "
            f"lag p50 {row['p50']:7.0f} ms"
            f"  p99 {row['p99']:7.0f} ms  max {row['max']:7.0f} ms  trend {row['trend']:+7.0f} ms",
            flush=True,
        )
        for k, hop in enumerate(HOPS, start=1):
            hops = [lags[k] * 1000 for lags in per]
            print(f"    {hop}: p50 {pct(hops, 0.5):.0f} ms, p99 {pct(hops, 0.99):.0f} ms", flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")
    summary(rows)
    await api.close()
    await admin.close()


def spread(ms: list[float]) -> dict[str, float]:
    """Count, p50, p99, max, and trend: the median of the last fifth minus the first fifth's."""
    fifth = max(1, len(ms) // 5)
    trend = statistics.median(ms[-fifth:]) - statistics.median(ms[:fifth])
    return {"n": len(ms), "p50": pct(ms, 0.50), "p99": pct(ms, 0.99), "max": max(ms), "trend": trend}


def summary(rows: list[dict[str, Any]]) -> None:
    """The runs as a markdown table, each p50 against the lowest rate's (the baseline)."""
    head = [
        "rate (reached)",
        "payments",
        "lag p50 ms",
        "p99 ms",
        "max ms",
        "trend ms",
        "p50 / lowest rate's p50",
    ]
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in rows:
        cells = [f"{r['rate']:.0f}/s ({r['reached']:.1f})", str(r["n"])]
        cells += [f"{r[k]:.0f}" for k in ("p50", "p99", "max")]
        cells += [f"{r['trend']:+.0f}", f"{r['p50'] / rows[0]['p50']:.2f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for flag, default, about in [
        ("--rates", "5,20,40", "payments per second, one run each"),
        ("--seconds", 30.0, "of each run"),
        ("--lodgings", 40, "PR hotels registered"),
        ("--setup-rate", 40.0, "declarations per second before the runs"),
    ]:
        parser.add_argument(flag, type=type(default), default=default, help=about)
    asyncio.run(main(parser.parse_args()))
