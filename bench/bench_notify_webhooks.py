"""notify's webhook pipeline against plain signed POSTs to the same receiver, same run.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/bench_notify_webhooks.py [--events 400] [--subs 3]

Roomtax: ``--events`` declaration events go through notify's consumer handler (inbox,
projection, tenancy fan-out to ``--subs`` matching subscriptions: the operator's and
agency ones), then the delivery loop (:func:`notify.webhooks.delivery.deliver_due`:
lease, SSRF check, sign, POST, record the attempt) until every delivery is delivered.
Baseline: the same number of deliveries as direct httpx POSTs of the same body, signed,
50 at a time (the loop's batch), to the same aiohttp receiver. Both on a fresh database
``roomtax_bench_notify`` (alembic head). Prints deliveries/s of each and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import httpx

from servicekit.runtime import SystemClock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "services" / "notify" / "tests"))

from notify_factories import Receiver, apply, declaration, lodging  # noqa: E402
from sqlalchemy import text  # noqa: E402

from notify.settings import NotifySettings  # noqa: E402
from notify.webhooks import signing  # noqa: E402
from notify.webhooks.delivery import deliver_due  # noqa: E402
from notify.webhooks.service import subscribe  # noqa: E402
from servicekit.auth import Principal  # noqa: E402
from servicekit.db import make_engine, make_sessionmaker  # noqa: E402
from servicekit.testing import fresh_database  # noqa: E402

FILED = "roomtax.filing.declaration.filed.v1"
BATCH = 50


async def main(events: int, subs: int) -> None:
    url = await fresh_database("roomtax_bench_notify", ROOT / "services" / "notify" / "migrations")
    settings = NotifySettings(environment="test", database_url=url, webhook_allow_private_targets=True)
    engine = make_engine(url, application_name="bench-notify", pool_size=5)
    db = make_sessionmaker(engine, service="notify")
    receiver = Receiver()
    await receiver.start()
    try:
        account = await lodging(db, settings, operator_id="op-bench")
        owners = [Principal("bench-op", "operator", operator_id="op-bench")]
        owners += [Principal(f"bench-agency-{i}", "agency-admin") for i in range(subs - 1)]
        async with db() as session, session.begin():
            for principal in owners:
                await subscribe(
                    session,
                    principal=principal,
                    url=receiver.url,
                    event_types=[FILED],
                    description=None,
                    settings=settings,
                )
        evs = [declaration(account, period=f"20{10 + i // 12:02d}-{i % 12 + 1:02d}") for i in range(events)]
        started = time.perf_counter()
        for ev in evs:
            await apply(db, settings, ev)
        fanned = time.perf_counter() - started
        total = events * subs
        async with httpx.AsyncClient(timeout=10) as client:
            started = time.perf_counter()
            while len(receiver.received) < total:
                await deliver_due(db, settings, client, clock=SystemClock(), limit=BATCH)
            roomtax = time.perf_counter() - started
            async with db() as session:
                delivered = await session.scalar(
                    text("SELECT count(*) FROM deliveries WHERE status = 'delivered'")
                )
                bodies = (
                    (
                        await session.execute(
                            text("SELECT body FROM events WHERE event_type = :t ORDER BY received_at"),
                            {"t": FILED},
                        )
                    )
                    .scalars()
                    .all()
                )
            assert delivered == total, (delivered, total)
            receiver.received.clear()
            payloads = [b.encode() for b in bodies for _ in range(subs)]
            started = time.perf_counter()
            for i in range(0, len(payloads), BATCH):
                await asyncio.gather(
                    *(
                        client.post(
                            receiver.url,
                            content=body,
                            headers={signing.HEADER: signing.sign(["whsec_bench"], body)},
                        )
                        for body in payloads[i : i + BATCH]
                    )
                )
            baseline = time.perf_counter() - started
        assert len(receiver.received) == total
        print(f"events {events}, subscriptions {subs}, deliveries {total}")
        print(f"  fan-out (consumer handler, inbox + tenancy): {events / fanned:8.1f} events/s")
        print(f"  notify delivery loop:                         {total / roomtax:8.1f} deliveries/s")
        print(f"  baseline (signed httpx POSTs, {BATCH} at a time):   {total / baseline:8.1f} deliveries/s")
        print(f"  ratio notify / baseline: {(total / roomtax) / (total / baseline):.2f}")
    finally:
        await receiver.stop()
        await engine.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--subs", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.events, args.subs))
