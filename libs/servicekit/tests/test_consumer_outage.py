"""A consumer outlives a broker outage: its reconnect loop keeps running (no task ends).

aiokafka's ``stop()`` of a consumer whose broker is gone raises the ``CancelledError`` of
its own fetch tasks; it used to end the consumer's task at the first reconnect, which
stopped the worker's heartbeat and left the service consuming nothing until a restart.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import async_sessionmaker

from servicekit.consumer import EventConsumer
from servicekit.testing import BrokerProcess

OUTAGE_SECONDS = 20


async def test_consumers_keep_running_through_a_broker_outage() -> None:
    broker = BrokerProcess()
    broker.start()
    stop = asyncio.Event()
    consumers = [
        EventConsumer(
            name=f"outage-{i}",
            bootstrap=broker.bootstrap,
            topics=[f"roomtax.outage.{i}"],
            sessionmaker=async_sessionmaker(),  # no record arrives: no transaction is opened
            handlers=[],
            check_interval=0.5,
        )
        for i in range(3)
    ]
    tasks = [asyncio.create_task(c.run(stop)) for c in consumers]
    try:
        await asyncio.sleep(5)  # joined their groups
        broker.stop()
        for _ in range(OUTAGE_SECONDS):
            await asyncio.sleep(1)
            assert [t.done() for t in tasks] == [False, False, False], [
                repr(t.exception()) if t.done() and not t.cancelled() else "cancelled" for t in tasks
            ]
        broker.start()
        await asyncio.sleep(3)
        assert [t.done() for t in tasks] == [False, False, False]
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=30)
        broker.stop()
