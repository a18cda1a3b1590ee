"""The consumer's batches: many events per transaction, deferred work once per key, a poll in one pass."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from servicekit_fixtures import EVENT, TOPIC
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.consumer import EventConsumer, once_per_batch
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import emit
from servicekit.testing import BrokerProcess
from taxcore.events import CloudEvent

SM = async_sessionmaker[AsyncSession]


@pytest.fixture
async def sm(chassis_db: str) -> AsyncIterator[SM]:
    engine = make_engine(chassis_db, application_name="chassis-batch-test", pool_size=2)
    yield make_sessionmaker(engine, service="chassis")
    await engine.dispose()


def event(name: str) -> CloudEvent:
    return CloudEvent(
        id=str(uuid.uuid4()),
        source="/test",
        type=EVENT,
        subject=name,
        time=datetime.now(UTC),
        data={"name": name, "key": name.split("/")[0]},
    )


def record(ev: CloudEvent, offset: int) -> ConsumerRecord[bytes, bytes]:
    value = ev.model_dump_json().encode()
    return ConsumerRecord(
        topic=TOPIC,
        partition=0,
        offset=offset,
        timestamp=0,
        timestamp_type=0,
        key=b"k",
        value=value,
        checksum=None,
        serialized_key_size=1,
        serialized_value_size=len(value),
        headers=(),
    )


async def names_in_order(sm: SM, prefix: str) -> list[tuple[str, int]]:
    """(name, transaction id) of every applied row of this test, in insertion order."""
    async with sm() as session:
        rows = await session.execute(
            text("SELECT name, xmin::text::bigint FROM applied WHERE name LIKE :p ORDER BY seq"),
            {"p": f"{prefix}%"},
        )
        return [(r[0], r[1]) for r in rows]


class Recorder:
    """A handler that records each event, and defers a 'settle' of its key to the batch's end."""

    def __init__(self, prefix: str, *, poison: str | None = None) -> None:
        self.prefix = prefix
        self.poison = poison
        self.settled: list[tuple[str, int]] = []  # (key, events of the key applied when it ran)

    async def __call__(self, session: AsyncSession, ev: CloudEvent) -> None:
        if ev.data["name"] == self.poison:
            raise ValueError("this event can never be applied")
        await session.execute(
            text("INSERT INTO applied (event_id, name) VALUES (:e, :n)"), {"e": ev.id, "n": ev.data["name"]}
        )
        key = ev.data["key"]

        async def settle() -> None:
            count = await session.scalar(
                text("SELECT count(*) FROM applied WHERE name LIKE :p"), {"p": f"{key}/%"}
            )
            self.settled.append((key, int(count or 0)))

        await once_per_batch(session, key, settle)


class TestBatches:
    async def test_a_batch_is_one_transaction_in_order_and_each_key_settles_once_at_its_end(
        self, sm: SM
    ) -> None:
        run = uuid.uuid4().hex[:8]
        a, b = f"a{run}", f"b{run}"
        handler = Recorder(run)
        consumer = EventConsumer(
            name=f"batch-{run}", bootstrap="unused:0", topics=[TOPIC], sessionmaker=sm,
            handlers={EVENT: handler}, batch_size=10,
        )  # fmt: skip
        earlier = event(f"{a}/0")
        assert await consumer.apply(earlier, handler) == "applied"  # one event: settles at once
        evs = [event(f"{a}/1"), event(f"{b}/1"), event(f"{a}/2"), event(f"{b}/2"), event(f"{a}/3")]
        stream = [earlier, evs[0], evs[1], evs[0], evs[2], evs[3], evs[4]]  # a redelivery, a duplicate
        await consumer.handle_records([record(ev, i) for i, ev in enumerate(stream)])

        rows_a = await names_in_order(sm, a)
        rows_b = await names_in_order(sm, b)
        assert [n for n, _ in rows_a] == [f"{a}/0", f"{a}/1", f"{a}/2", f"{a}/3"]
        assert [n for n, _ in rows_b] == [f"{b}/1", f"{b}/2"]
        assert len({tx for _, tx in rows_a[1:] + rows_b}) == 1  # the five new events: one transaction
        assert handler.settled == [(a, 1), (a, 4), (b, 2)]  # once per key, after the batch's last event
        assert (consumer.applied, consumer.duplicates, consumer.batches) == (6, 2, 1)

    async def test_a_poison_event_in_a_batch_is_parked_and_the_others_are_applied_once(self, sm: SM) -> None:
        run = uuid.uuid4().hex[:8]
        k = f"k{run}"
        handler = Recorder(run, poison=f"{k}/2")
        name = f"batch-{run}"
        consumer = EventConsumer(
            name=name, bootstrap="unused:0", topics=[TOPIC], sessionmaker=sm,
            handlers={EVENT: handler}, batch_size=10, retry_delay=0.01,
        )  # fmt: skip
        evs = [event(f"{k}/{i}") for i in range(1, 5)]
        await consumer.handle_records([record(ev, i) for i, ev in enumerate(evs)])

        rows = await names_in_order(sm, k)
        assert [n for n, _ in rows] == [f"{k}/1", f"{k}/3", f"{k}/4"]  # in order, each once
        assert len({tx for _, tx in rows}) == 3  # the fallback: one transaction per event
        assert (consumer.applied, consumer.parked, consumer.batches) == (3, 1, 0)
        async with sm() as session:
            parked = (
                (
                    await session.execute(
                        text("SELECT event_id FROM dead_letters WHERE consumer = :c"), {"c": name}
                    )
                )
                .scalars()
                .all()
            )
            inbox = (
                (await session.execute(text("SELECT event_id FROM inbox WHERE consumer = :c"), {"c": name}))
                .scalars()
                .all()
            )
        assert list(parked) == [evs[1].id]
        assert sorted(inbox) == sorted(e.id for e in (evs[0], evs[2], evs[3]))

    async def test_outside_a_consumer_deferred_work_runs_at_once(self, sm: SM) -> None:
        ran: list[str] = []

        async def work() -> None:
            ran.append("now")

        async with sm() as session, session.begin():
            await once_per_batch(session, "k", work)
            assert ran == ["now"]


class Emitter:
    """A handler that emits an event per event applied and one more when its key settles."""

    def __init__(self, *, poison: str | None = None) -> None:
        self.poison = poison
        self.held: list[int] = []  # outbox rows of the transaction already written when settling

    async def __call__(self, session: AsyncSession, ev: CloudEvent) -> None:
        name, key = ev.data["name"], ev.data["key"]
        await emit(session, event_type=EVENT, topic=TOPIC, key=key, data={"name": name})
        if name == self.poison:
            raise ValueError("this event can never be applied")

        async def settle() -> None:
            await emit(session, event_type=EVENT, topic=TOPIC, key=key, data={"name": f"{key}/settled"})
            mine = "SELECT count(*) FROM outbox WHERE xmin::text = txid_current()::text"
            self.held.append(int(await session.scalar(text(mine)) or 0))

        await once_per_batch(session, key, settle)


async def emitted(sm: SM, prefix: str) -> list[tuple[str, int]]:
    """(name, transaction id) of the outbox rows of this test, in the order written."""
    async with sm() as session:
        rows = await session.execute(
            text(
                "SELECT payload->'data'->>'name', xmin::text::bigint FROM outbox "
                "WHERE payload->'data'->>'name' LIKE :p ORDER BY id"
            ),
            {"p": f"{prefix}%"},
        )
        return [(r[0], r[1]) for r in rows]


class TestHeldEvents:
    async def test_a_batch_writes_its_events_at_its_end_in_the_order_emitted(self, sm: SM) -> None:
        run = uuid.uuid4().hex[:8]
        a, b = f"a{run}", f"b{run}"
        handler = Emitter()
        consumer = EventConsumer(
            name=f"held-{run}", bootstrap="unused:0", topics=[TOPIC], sessionmaker=sm,
            handlers={EVENT: handler}, batch_size=10,
        )  # fmt: skip
        evs = [event(f"{a}/1"), event(f"{b}/1"), event(f"{a}/2")]
        await consumer.handle_records([record(ev, i) for i, ev in enumerate(evs)])

        rows_a = await emitted(sm, a)
        rows_b = await emitted(sm, b)
        assert [n for n, _ in rows_a] == [f"{a}/1", f"{a}/2", f"{a}/settled"]
        assert [n for n, _ in rows_b] == [f"{b}/1", f"{b}/settled"]
        assert len({tx for _, tx in rows_a + rows_b}) == 1
        assert handler.held == [0, 0]  # nothing written while the batch ran: one INSERT at its end

    async def test_a_failed_batch_writes_none_of_its_events_and_each_event_writes_its_own(
        self, sm: SM
    ) -> None:
        run = uuid.uuid4().hex[:8]
        k = f"k{run}"
        consumer = EventConsumer(
            name=f"held-{run}", bootstrap="unused:0", topics=[TOPIC], sessionmaker=sm,
            handlers={EVENT: Emitter(poison=f"{k}/2")}, batch_size=10, retry_delay=0.01,
        )  # fmt: skip
        evs = [event(f"{k}/{i}") for i in range(1, 4)]
        await consumer.handle_records([record(ev, i) for i, ev in enumerate(evs)])

        rows = await emitted(sm, k)
        names = [f"{k}/1", f"{k}/settled", f"{k}/3", f"{k}/settled"]
        assert [n for n, _ in rows] == names  # one by one: the poison's events rolled back
        assert len({tx for _, tx in rows}) == 2
        assert (consumer.applied, consumer.parked, consumer.batches) == (2, 1, 0)

    async def test_outside_a_consumer_an_event_is_written_at_once(self, sm: SM) -> None:
        run = uuid.uuid4().hex[:8]
        async with sm() as session, session.begin():
            await emit(session, event_type=EVENT, topic=TOPIC, key=run, data={"name": f"{run}/now"})
            mine = "SELECT count(*) FROM outbox WHERE xmin::text = txid_current()::text"
            assert await session.scalar(text(mine)) == 1
            await session.rollback()


class TestScaleOut:
    async def test_two_consumers_of_one_group_split_the_partitions_and_apply_each_event_once_in_key_order(
        self, sm: SM, broker: BrokerProcess
    ) -> None:
        """Two workers (the same consumer name, so one Kafka group) on a 4-partition topic."""
        run = uuid.uuid4().hex[:8]
        topic = f"scale-{run}"
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])
        finally:
            await admin.close()
        keys = [f"k{i}{run}" for i in range(12)]
        stop = asyncio.Event()
        workers = [
            EventConsumer(
                name=f"scale-{run}",
                bootstrap=broker.bootstrap,
                topics=[topic],
                sessionmaker=sm,
                handlers={EVENT: Recorder(run)},
                batch_size=50,
            )  # fmt: skip
            for _ in range(2)
        ]
        tasks = [asyncio.create_task(w.run(stop)) for w in workers]
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        await producer.start()
        produced = 0
        try:  # rounds of one event per key, until both members have applied some (the group
            # forms while the first rounds are consumed) and everything produced is applied
            deadline = asyncio.get_running_loop().time() + 120
            for n in range(1, 31):
                for key in keys:
                    ev = event(f"{key}/{n:02d}")
                    await producer.send_and_wait(topic, ev.model_dump_json().encode(), key=key.encode())
                produced += len(keys)
                while sum(w.applied for w in workers) < produced:
                    assert asyncio.get_running_loop().time() < deadline, [w.applied for w in workers]
                    await asyncio.sleep(0.1)
                if n >= 3 and all(w.applied > 0 for w in workers):
                    break
        finally:
            await producer.stop()
            stop.set()
            await asyncio.gather(*tasks)
        assert all(w.applied > 0 for w in workers), [w.applied for w in workers]  # both did work
        assert sum(w.applied for w in workers) == produced
        rounds = produced // len(keys)
        for key in keys:  # each event once, each key's events in the order produced
            names = [n for n, _ in await names_in_order(sm, key)]
            assert names == [f"{key}/{n:02d}" for n in range(1, rounds + 1)]


class Watched(EventConsumer):
    """The consumer with each poll's records and each offset commit it made written down."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.polls: list[list[tuple[int, int]]] = []  # (partition, offset) of each poll's records
        self.commits: list[dict[int, int]] = []

    async def handle_poll(
        self,
        consumer: AIOKafkaConsumer,
        polled: Mapping[TopicPartition, Sequence[ConsumerRecord[bytes, bytes]]],
    ) -> None:
        real = consumer.commit

        async def commit(offsets: dict[TopicPartition, int]) -> None:
            self.commits.append({tp.partition: o for tp, o in offsets.items()})
            await real(offsets)

        consumer.commit = commit  # type: ignore[method-assign]
        try:
            if any(polled.values()):
                self.polls.append([(r.partition, r.offset) for rs in polled.values() for r in rs])
            await super().handle_poll(consumer, polled)
        finally:
            consumer.commit = real  # type: ignore[method-assign]


class TestPollPass:
    async def test_records_of_two_partitions_in_one_poll_are_one_transaction_one_commit_effects_once_each(
        self, sm: SM, broker: BrokerProcess
    ) -> None:
        run = uuid.uuid4().hex[:8]
        topic = f"poll-{run}"
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
        finally:
            await admin.close()
        a, b = f"a{run}", f"b{run}"
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        await producer.start()
        try:  # everything on the log before the consumer starts: its first poll brings both
            for n in range(1, 4):
                for key, partition in ((a, 0), (b, 1)):
                    ev = event(f"{key}/{n}")
                    await producer.send_and_wait(
                        topic, ev.model_dump_json().encode(), key=key.encode(), partition=partition
                    )
            # the same event of b delivered twice (a producer retry): applied once
            await producer.send_and_wait(topic, ev.model_dump_json().encode(), key=b.encode(), partition=1)
        finally:
            await producer.stop()
        handler = Recorder(run)
        consumer = Watched(
            name=f"poll-{run}", bootstrap=broker.bootstrap, topics=[topic], sessionmaker=sm,
            handlers={EVENT: handler}, batch_size=50,
        )  # fmt: skip
        stop = asyncio.Event()
        task = asyncio.create_task(consumer.run(stop))
        try:
            deadline = asyncio.get_running_loop().time() + 60
            while consumer.applied + consumer.duplicates < 7:
                assert asyncio.get_running_loop().time() < deadline, (consumer.applied, consumer.polls)
                await asyncio.sleep(0.1)
            await asyncio.sleep(1)  # a poll after these brings nothing more
        finally:
            stop.set()
            await asyncio.wait_for(task, timeout=30)

        assert len(consumer.polls) == 1  # one poll brought both partitions' records (in either order)
        assert sorted(consumer.polls[0]) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]
        assert consumer.commits == [{0: 3, 1: 4}]  # one commit for the poll, both partitions
        rows_a = await names_in_order(sm, a)
        rows_b = await names_in_order(sm, b)
        assert [n for n, _ in rows_a] == [f"{a}/1", f"{a}/2", f"{a}/3"]
        assert [n for n, _ in rows_b] == [f"{b}/1", f"{b}/2", f"{b}/3"]  # each once, in order
        assert len({tx for _, tx in rows_a + rows_b}) == 1  # both partitions': one transaction
        assert sorted(handler.settled) == [(a, 3), (b, 3)]  # each key settled once, at the batch's end
        assert (consumer.applied, consumer.duplicates, consumer.parked, consumer.batches) == (6, 1, 0, 1)
        async with sm() as session:
            inbox = await session.scalar(
                text("SELECT count(*) FROM inbox WHERE consumer = :c"), {"c": consumer.name}
            )
        assert inbox == 6

        # a new member of the group starts at the committed offsets: nothing is applied again
        again = Watched(
            name=f"poll-{run}", bootstrap=broker.bootstrap, topics=[topic], sessionmaker=sm,
            handlers={EVENT: Recorder(run)}, batch_size=50,
        )  # fmt: skip
        stop = asyncio.Event()
        task = asyncio.create_task(again.run(stop))
        await asyncio.sleep(5)  # joined the group and polled
        stop.set()
        await asyncio.wait_for(task, timeout=30)
        assert (again.polls, again.commits, again.applied, again.duplicates) == ([], [], 0, 0)

    async def test_a_lone_record_goes_the_batch_way_prepare_included(self, sm: SM) -> None:
        run = uuid.uuid4().hex[:8]
        k = f"k{run}"
        prepared: list[list[str]] = []

        async def prepare(session: AsyncSession, events: Sequence[Any]) -> None:
            prepared.append([e.data["name"] for e in events])

        consumer = EventConsumer(
            name=f"lone-{run}", bootstrap="unused:0", topics=["t"], sessionmaker=sm,
            handlers={EVENT: Recorder(run)}, batch_size=50, prepare=prepare,
        )  # fmt: skip
        await consumer.handle_records([record(event(f"{k}/1"), 0)])
        assert prepared == [[f"{k}/1"]]
        assert [n for n, _ in await names_in_order(sm, k)] == [f"{k}/1"]
        assert (consumer.applied, consumer.batches) == (1, 0)  # batches: transactions of 2+ events
