"""A broker that restarts empty (Tansu, in memory) under a running relay and consumer.

The outbox is the durable log: after the restart a NEW event must reach the consumer within
seconds, whether traffic flows or not, and whether the relay was restarted too. Tansu reports
a partition's end offset as its last batch's base offset + 1 and never answers
OFFSET_OUT_OF_RANGE, so neither the relay nor the consumer may rely on either.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from servicekit_fixtures import EVENT, TOPIC, make_chassis_db
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import OutboxRelay, emit
from servicekit.testing import BrokerProcess
from taxcore.events import CloudEvent

SM = async_sessionmaker[AsyncSession]


@pytest.fixture(scope="module")
async def chassis_db() -> str:
    """A database of its own: its outbox is published to this module's brokers only (one
    service database, one cluster), not to the session broker of the other chassis tests."""
    return await make_chassis_db("roomtax_test_chassis_restart")


@pytest.fixture
async def sm(chassis_db: str) -> AsyncIterator[SM]:
    engine = make_engine(chassis_db, application_name="restart-test", pool_size=4)
    maker = make_sessionmaker(engine, service="chassis")
    async with maker() as session, session.begin():
        await session.execute(text("DELETE FROM outbox"))  # each test: its own broker's rows only
    yield maker
    await engine.dispose()


def dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def record(session: AsyncSession, event: CloudEvent) -> None:
    await session.execute(
        text("INSERT INTO applied (event_id, name) VALUES (:e, :n)"), {"e": event.id, "n": event.data["name"]}
    )


async def write(sm: SM, names: list[str], key: str) -> None:
    async with sm() as session, session.begin():
        for name in names:
            await emit(session, event_type=EVENT, key=key, topic=TOPIC, data={"name": name, "amount": "1.00"})


async def counts(sm: SM, names: list[str]) -> dict[str, int]:
    async with sm() as session:
        rows = await session.execute(
            text("SELECT name, count(*) FROM applied WHERE name = ANY(:n) GROUP BY name"), {"n": names}
        )
        return {r[0]: r[1] for r in rows}


async def arrives(sm: SM, names: list[str], timeout: float) -> float:
    """Seconds until every name is applied; fails after ``timeout``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while loop.time() - started < timeout:
        if len(await counts(sm, names)) == len(names):
            return loop.time() - started
        await asyncio.sleep(0.1)
    missing = sorted(set(names) - set(await counts(sm, names)))
    raise AssertionError(f"not applied within {timeout}s: {missing}")


class Scenario:
    def __init__(self, sm: SM, chassis_db: str, broker: BrokerProcess) -> None:
        self.sm = sm
        self.db = chassis_db
        self.broker = broker
        self.stop = asyncio.Event()
        self.tag = uuid.uuid4().hex[:6]
        self.key = f"lodging-{self.tag}"
        self.relay_stop = asyncio.Event()
        self.relay_task: asyncio.Task[None] | None = None
        self.consumer = EventConsumer(
            name=f"restart-{self.tag}",
            bootstrap=broker.bootstrap,
            topics=[TOPIC],
            sessionmaker=sm,
            handlers={EVENT: record},
        )
        self.consumer_stop = asyncio.Event()
        self.consumer_task = asyncio.create_task(self.consumer.run(self.consumer_stop))
        self.start_relay()

    async def stop_consumer(self) -> None:
        self.consumer_stop.set()
        await self.consumer_task

    def start_consumer(self) -> None:
        """Start the (stopped) consumer again: a worker restart, same group."""
        self.consumer_stop = asyncio.Event()
        self.consumer_task = asyncio.create_task(self.consumer.run(self.consumer_stop))

    def start_relay(self) -> None:
        self.relay_stop = asyncio.Event()
        relay = OutboxRelay(
            dsn=dsn(self.db), bootstrap=self.broker.bootstrap, name=f"relay-{self.tag}", check_interval=0.5
        )
        self.relay = relay
        self.relay_task = asyncio.create_task(relay.run(self.relay_stop))

    async def stop_relay(self) -> None:
        self.relay_stop.set()
        assert self.relay_task is not None
        await self.relay_task

    async def close(self) -> None:
        self.consumer_stop.set()
        await self.stop_relay()
        await self.consumer_task


@pytest.fixture
async def scenario(sm: SM, chassis_db: str) -> AsyncIterator[Scenario]:
    own = BrokerProcess()
    own.start()
    s = Scenario(sm, chassis_db, own)
    try:
        yield s
    finally:
        await s.close()
        own.stop()


async def flow(s: Scenario, label: str, n: int = 6) -> list[str]:
    """n events of one key in one transaction (one batch on one partition), then 2 single ones."""
    names = [f"{label}-{i}-{s.tag}" for i in range(n)]
    await write(s.sm, names, s.key)
    for extra in range(2):
        name = f"{label}-single{extra}-{s.tag}"
        await write(s.sm, [name], s.key)
        names.append(name)
        await asyncio.sleep(0.3)
    await arrives(s.sm, names, timeout=30)
    return names


async def partition_of(s: Scenario, name: str) -> TopicPartition:
    async with s.sm() as session:
        p = (
            await session.execute(
                text("SELECT \"partition\" FROM outbox WHERE payload->'data'->>'name' = :n"), {"n": name}
            )
        ).scalar_one()
    return TopicPartition(TOPIC, p)


class TestBrokerRestart:
    async def test_new_event_after_restart_with_traffic(self, scenario: Scenario) -> None:
        before = await flow(scenario, "before")
        scenario.broker.restart()
        new = [f"new-{scenario.tag}"]
        await write(scenario.sm, new, scenario.key)
        await arrives(scenario.sm, new, timeout=20)
        await asyncio.sleep(1)
        assert await counts(scenario.sm, before + new) == dict.fromkeys(before + new, 1)

    async def test_new_event_after_an_idle_restart(self, scenario: Scenario) -> None:
        before = await flow(scenario, "before")
        scenario.broker.restart()
        await asyncio.sleep(8)  # nothing flows: the relay's checks and the consumer's polls only
        new = [f"new-{scenario.tag}"]
        await write(scenario.sm, new, scenario.key)
        await arrives(scenario.sm, new, timeout=20)
        assert await counts(scenario.sm, before + new) == dict.fromkeys(before + new, 1)

    async def test_a_group_position_past_the_new_end_is_read_again_from_the_beginning(
        self, scenario: Scenario
    ) -> None:
        """Tansu accepts an offset commit from the group member as it was before the restart
        (the commit of a batch handled across the restart) and never answers
        OFFSET_OUT_OF_RANGE: without a check the group waits at that offset, and so does its
        restarted worker (the ops report). The old log was longer than the relay's window (an
        earlier replay, or rows past retention), so the replay does not reach that offset."""
        s = scenario
        before = await flow(s, "before")
        tp = await partition_of(s, before[-1])
        # the worker is down across the broker's restart until its own: a running member would
        # read the relay's replay (which recreates the topic) and could commit its position over
        # the stale one (a race the CI of stop 25 lost: no rewind was needed)
        await s.stop_consumer()
        s.broker.restart()
        # the commit the consumer sent for the batch it was handling when the broker died
        # (the new broker refuses it until the topic exists again: retry until it holds)
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            stale = AIOKafkaConsumer(bootstrap_servers=s.broker.bootstrap, group_id=s.consumer.name)
            await stale.start()
            try:
                stale.assign([tp])
                with contextlib.suppress(KafkaError):
                    await stale.commit({tp: 1000})
                if await stale.committed(tp) == 1000:
                    break
            finally:
                await stale.stop()
            assert asyncio.get_running_loop().time() < deadline, "the stale position never held"
            await asyncio.sleep(0.5)
        s.start_consumer()
        new = [f"new-{s.tag}"]
        await write(s.sm, new, s.key)  # just after the relay's replay, far below 1000
        await arrives(s.sm, new, timeout=30)
        assert await counts(s.sm, before + new) == dict.fromkeys(before + new, 1)
        assert s.consumer.rewinds >= 1

    async def test_a_restarted_relay_republishes_what_the_restarted_broker_lost(
        self, sm: SM, chassis_db: str
    ) -> None:
        """Events published, not yet consumed; broker and relay restart together (the worker was
        restarted with it); other clients recreate the topic before the relay is back."""
        broker = BrokerProcess()
        broker.start()
        tag = uuid.uuid4().hex[:6]
        names = [f"unread-{i}-{tag}" for i in range(5)]
        try:
            stop = asyncio.Event()
            relay = OutboxRelay(dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name=f"r1-{tag}")
            task = asyncio.create_task(relay.run(stop))
            await write(sm, names, f"k-{tag}")
            for _ in range(300):
                if relay.published >= len(names):
                    break
                await asyncio.sleep(0.1)
            stop.set()
            await task
            broker.restart()
            producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
            await producer.start()  # another service's traffic recreates the topic, empty
            await (await producer.send(TOPIC, value=b"{}", key=b"other"))
            await producer.stop()
            stop = asyncio.Event()
            relay = OutboxRelay(
                dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name=f"r2-{tag}", check_interval=0.5
            )
            consumer = EventConsumer(
                name=f"late-{tag}",
                bootstrap=broker.bootstrap,
                topics=[TOPIC],
                sessionmaker=sm,
                handlers={EVENT: record},
            )
            tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
            try:
                await arrives(sm, names, timeout=30)
                assert await counts(sm, names) == dict.fromkeys(names, 1)
                assert relay.replays == 1
            finally:
                stop.set()
                await asyncio.gather(*tasks)
        finally:
            broker.stop()

    async def test_new_event_after_restart_with_the_relay_restarted(self, scenario: Scenario) -> None:
        before = await flow(scenario, "before")
        await scenario.stop_relay()
        scenario.broker.restart()
        await asyncio.sleep(3)
        scenario.start_relay()
        new = [f"new-{scenario.tag}"]
        await write(scenario.sm, new, scenario.key)
        await arrives(scenario.sm, new, timeout=20)
        assert await counts(scenario.sm, before + new) == dict.fromkeys(before + new, 1)
