"""Outbox relay and consumer against the real broker and database."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from aiokafka import AIOKafkaProducer
from servicekit_fixtures import EVENT, TOPIC
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import OutboxRelay, emit
from servicekit.testing import BrokerProcess
from taxcore.events import CloudEvent

SM = async_sessionmaker[AsyncSession]


async def record(session: AsyncSession, event: CloudEvent) -> None:
    await session.execute(
        text("INSERT INTO applied (event_id, name) VALUES (:e, :n)"), {"e": event.id, "n": event.data["name"]}
    )


async def poison(session: AsyncSession, event: CloudEvent) -> None:
    if event.data["name"].startswith("poison"):
        raise ValueError("this event can never be applied")
    await record(session, event)


@pytest.fixture
async def sm(chassis_db: str) -> AsyncIterator[SM]:
    engine = make_engine(chassis_db, application_name="chassis-test", pool_size=4)
    yield make_sessionmaker(engine, service="chassis")
    await engine.dispose()


async def write(sm: SM, name: str) -> str:
    async with sm() as session, session.begin():
        return await emit(
            session, event_type=EVENT, key=name, topic=TOPIC, data={"name": name, "amount": "1.00"}
        )


async def applied(sm: SM, names: list[str]) -> dict[str, int]:
    async with sm() as session:
        rows = await session.execute(
            text("SELECT name, count(*) FROM applied WHERE name = ANY(:n) GROUP BY name"), {"n": names}
        )
        return {r[0]: r[1] for r in rows}


async def eventually(check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if await check():
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.1)


def dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


class TestRelayAndConsumer:
    async def test_event_reaches_consumer_once(self, sm: SM, chassis_db: str, broker: BrokerProcess) -> None:
        stop = asyncio.Event()
        relay = OutboxRelay(dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name="t-relay")
        group = f"t-{uuid.uuid4().hex[:6]}"
        consumer = EventConsumer(
            name=group, bootstrap=broker.bootstrap, topics=[TOPIC], sessionmaker=sm, handlers={EVENT: record}
        )
        tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
        try:
            name = f"w-{uuid.uuid4().hex[:8]}"
            started = asyncio.get_running_loop().time()
            await write(sm, name)
            await eventually(lambda: _has(sm, [name]))
            latency = asyncio.get_running_loop().time() - started
            assert latency < 10  # LISTEN/NOTIFY wakes the relay; no poll interval in the path
            assert await applied(sm, [name]) == {name: 1}
        finally:
            stop.set()
            await asyncio.gather(*tasks)

    async def test_broker_restart_delivers_once(self, sm: SM, chassis_db: str) -> None:
        """Stop the broker, write, start it again: the event arrives, and is applied once.

        The restarted (in-memory) broker lost every message and offset: the relay notices
        and re-publishes its retention window; the consumer's inbox drops the duplicates.
        """
        own = BrokerProcess()
        own.start()
        stop = asyncio.Event()
        relay = OutboxRelay(
            dsn=dsn(chassis_db), bootstrap=own.bootstrap, name="restart-relay", check_interval=0.5
        )
        group = f"r-{uuid.uuid4().hex[:6]}"
        consumer = EventConsumer(
            name=group, bootstrap=own.bootstrap, topics=[TOPIC], sessionmaker=sm, handlers={EVENT: record}
        )
        tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
        try:
            before = f"before-{uuid.uuid4().hex[:8]}"
            await write(sm, before)
            await eventually(lambda: _has(sm, [before]))
            own.stop()
            during = f"during-{uuid.uuid4().hex[:8]}"
            await write(sm, during)
            await asyncio.sleep(1.5)
            async with sm() as session:
                pending = (
                    await session.execute(
                        text("SELECT published_at IS NULL FROM outbox WHERE key = :k"), {"k": during}
                    )
                ).scalar()
            assert pending is True  # still in the outbox while the broker is down
            own.start()
            await eventually(lambda: _has(sm, [before, during]), timeout=60)
            await asyncio.sleep(2)  # let any replayed duplicates arrive
            assert await applied(sm, [before, during]) == {before: 1, during: 1}
            assert relay.replays >= 1  # it noticed the broker had lost "before"
        finally:
            stop.set()
            await asyncio.gather(*tasks)
            own.stop()

    async def test_healthy_broker_never_triggers_a_replay(
        self, sm: SM, chassis_db: str, broker: BrokerProcess
    ) -> None:
        """Batches of keyed events spread over partitions; checks every 0.3 s find nothing lost."""
        stop = asyncio.Event()
        relay = OutboxRelay(
            dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name="calm-relay", check_interval=0.3
        )
        task = asyncio.create_task(relay.run(stop))
        try:
            for burst in range(3):
                async with sm() as session, session.begin():
                    for i in range(12):
                        await emit(
                            session,
                            event_type=EVENT,
                            key=f"calm-{burst}-{i}",
                            topic=TOPIC,
                            data={"name": f"calm-{uuid.uuid4().hex[:6]}", "amount": "1.00"},
                        )
                await asyncio.sleep(1.0)
            await asyncio.sleep(1.5)
            assert relay.published >= 36
            assert relay.replays == 0
        finally:
            stop.set()
            await task


class TestConsumerInbox:
    def _event(self, name: str) -> CloudEvent:
        return CloudEvent(
            id=str(uuid.uuid4()),
            source="/test",
            type=EVENT,
            subject=name,
            time=datetime.now(UTC),
            data={"name": name, "amount": "1.00"},
        )

    async def test_redelivered_event_is_applied_once(self, sm: SM) -> None:
        consumer = EventConsumer(
            name="inbox-test", bootstrap="unused:0", topics=[TOPIC], sessionmaker=sm, handlers={EVENT: record}
        )
        event = self._event(f"dup-{uuid.uuid4().hex[:8]}")
        assert await consumer.apply(event, record) == "applied"
        assert await consumer.apply(event, record) == "duplicate"
        assert await applied(sm, [event.data["name"]]) == {event.data["name"]: 1}

    async def test_redelivery_through_the_broker(self, sm: SM, broker: BrokerProcess) -> None:
        """The same CloudEvent produced twice (a relay retry) is applied once."""
        event = self._event(f"twice-{uuid.uuid4().hex[:8]}")
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False)
        await producer.start()
        try:
            payload = event.model_dump_json().encode()
            await producer.send_and_wait(TOPIC, payload, key=b"k")
            await producer.send_and_wait(TOPIC, payload, key=b"k")
        finally:
            await producer.stop()
        stop = asyncio.Event()
        consumer = EventConsumer(
            name=f"b-{uuid.uuid4().hex[:6]}",
            bootstrap=broker.bootstrap,
            topics=[TOPIC],
            sessionmaker=sm,
            handlers={EVENT: record},
        )
        task = asyncio.create_task(consumer.run(stop))
        try:
            await eventually(lambda: _has(sm, [event.data["name"]]))
            await eventually(lambda: _true(consumer.duplicates >= 1))
            assert await applied(sm, [event.data["name"]]) == {event.data["name"]: 1}
        finally:
            stop.set()
            await task

    async def test_poison_message_is_parked_and_consumer_moves_on(
        self, sm: SM, broker: BrokerProcess
    ) -> None:
        bad = self._event(f"poison-{uuid.uuid4().hex[:8]}")
        good = self._event(f"good-{uuid.uuid4().hex[:8]}")
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False)
        await producer.start()
        try:
            await producer.send_and_wait(TOPIC, b"{this is not json", key=b"x")
            await producer.send_and_wait(TOPIC, bad.model_dump_json().encode(), key=b"x")
            await producer.send_and_wait(TOPIC, good.model_dump_json().encode(), key=b"x")
        finally:
            await producer.stop()
        group = f"p-{uuid.uuid4().hex[:6]}"
        stop = asyncio.Event()
        consumer = EventConsumer(
            name=group,
            bootstrap=broker.bootstrap,
            topics=[TOPIC],
            sessionmaker=sm,
            handlers={EVENT: poison},
            retry_delay=0.01,
        )
        task = asyncio.create_task(consumer.run(stop))
        try:
            await eventually(lambda: _has(sm, [good.data["name"]]))
        finally:
            stop.set()
            await task
        async with sm() as session:
            rows = (
                await session.execute(
                    text("SELECT event_id, error FROM dead_letters WHERE consumer = :c ORDER BY id"),
                    {"c": group},
                )
            ).all()
        assert [r.event_id for r in rows[-2:]] == [None, bad.id]
        assert "unparseable event" in rows[-2].error
        assert "this event can never be applied" in rows[-1].error
        assert await applied(sm, [bad.data["name"]]) == {}


async def _has(sm: SM, names: list[str]) -> bool:
    return len(await applied(sm, names)) == len(names)


async def _true(value: bool) -> bool:
    return value


_ = json


class TestRetention:
    async def test_purge_deletes_only_published_rows_past_the_window(self, sm: SM, chassis_db: str) -> None:
        old_sent, old_unsent, recent = (f"{k}-{uuid.uuid4().hex[:8]}" for k in ("old", "unsent", "recent"))
        for name in (old_sent, old_unsent, recent):
            await write(sm, name)
        async with sm() as session, session.begin():
            await session.execute(
                text("UPDATE outbox SET created_at = now() - interval '30 days' WHERE key = ANY(:k)"),
                {"k": [old_sent, old_unsent]},
            )
            await session.execute(
                text("UPDATE outbox SET published_at = now() WHERE key = ANY(:k)"), {"k": [old_sent, recent]}
            )
        async with sm() as session, session.begin():
            await session.execute(
                text(
                    "INSERT INTO idempotency_keys (scope, key, request_hash, created_at) VALUES "
                    "('t', :old, 'h', now() - interval '8 days'), ('t', :new, 'h', now() - interval '6 days')"
                ),
                {"old": f"{old_sent}-key", "new": f"{recent}-key"},
            )
        relay = OutboxRelay(dsn=dsn(chassis_db), bootstrap="unused:0", name="purge-test")
        import asyncpg

        relay._pool = await asyncpg.create_pool(dsn(chassis_db), min_size=1, max_size=1)
        try:
            assert await relay.purge() >= 1
        finally:
            await relay._pool.close()
        async with sm() as session:
            left = (
                (
                    await session.execute(
                        text("SELECT key FROM outbox WHERE key = ANY(:k) ORDER BY key"),
                        {"k": [old_sent, old_unsent, recent]},
                    )
                )
                .scalars()
                .all()
            )
            keys = (
                (
                    await session.execute(
                        text("SELECT key FROM idempotency_keys WHERE key = ANY(:k)"),
                        {"k": [f"{old_sent}-key", f"{recent}-key"]},
                    )
                )
                .scalars()
                .all()
            )
        assert sorted(left) == sorted([old_unsent, recent])  # never drop what was not sent
        assert keys == [f"{recent}-key"]  # keys are honoured for seven days
