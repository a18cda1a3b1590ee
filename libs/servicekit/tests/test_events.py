"""Outbox relay and consumer against the real broker and database."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import (
    InvalidTopicError,
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    RecordTooLargeError,
)
from prometheus_client import REGISTRY
from servicekit_fixtures import EVENT, TOPIC
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import OutboxRelay, emit, mark_published, permanent_error
from servicekit.testing import BrokerProcess, auth
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


class _FirstClientPaused(EventConsumer):
    """A consumer whose first Kafka client fetches nothing: its partitions paused once assigned."""

    first: AIOKafkaConsumer | None = None
    paused_polls = 0

    async def handle_poll(self, consumer: AIOKafkaConsumer, polled: Any) -> None:
        if self.first is None and consumer.assignment():
            self.first = consumer
        if consumer is self.first:
            consumer.pause(*consumer.assignment())
            self.paused_polls += 1
        await super().handle_poll(consumer, polled)


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

    async def test_a_client_that_stopped_fetching_is_replaced(
        self, sm: SM, chassis_db: str, broker: BrokerProcess
    ) -> None:
        """Records wait in the assigned partitions and no poll brings them: after
        ``stall_timeout`` the consumer replaces its Kafka client, and the event is applied once.

        The first client's partitions are paused (it fetches nothing and reports no error, as
        one stuck rejoining its group after a broker restart: CI of stop 27, 180 s); without the
        replacement it would wait forever.
        """
        stop = asyncio.Event()
        relay = OutboxRelay(dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name="stall-relay")
        consumer = _FirstClientPaused(
            name=f"s-{uuid.uuid4().hex[:6]}",
            bootstrap=broker.bootstrap,
            topics=[TOPIC],
            sessionmaker=sm,
            handlers={EVENT: record},
            check_interval=0.5,
            stall_timeout=2.0,
        )
        tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
        try:
            await eventually(lambda: _true(consumer.first is not None))
            name = f"stall-{uuid.uuid4().hex[:8]}"
            await write(sm, name)
            await eventually(lambda: _has(sm, [name]))
            assert await applied(sm, [name]) == {name: 1}
            assert consumer.stall_restarts == 1
            assert consumer.paused_polls > 0  # the first client did poll, paused
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
        names: list[str] = []

        async def waited(check: Callable[[], Awaitable[bool]], timeout: float, stage: str) -> None:
            """``eventually``, and if it runs out, where the events stalled: not republished or
            not consumed (the failure in CI said only "condition not met in time")."""
            try:
                await eventually(check, timeout=timeout)
            except AssertionError as exc:
                async with sm() as session:
                    rows = (
                        await session.execute(
                            text(
                                'SELECT key, published_at IS NOT NULL, "partition", "offset" FROM outbox '
                                "WHERE key = ANY(:k) ORDER BY id"
                            ),
                            {"k": names},
                        )
                    ).all()
                raise AssertionError(
                    f"{exc} ({stage}, {timeout} s); applied {await applied(sm, names)}, outbox rows "
                    f"{rows}, relay published {relay.published} replays {relay.replays}, consumer "
                    f"applied {consumer.applied} duplicates {consumer.duplicates} rewinds {consumer.rewinds} "
                    f"stall restarts {consumer.stall_restarts}"
                ) from exc

        try:
            before = f"before-{uuid.uuid4().hex[:8]}"
            names.append(before)
            await write(sm, before)
            await waited(lambda: _has(sm, [before]), 30, "before the restart")
            own.stop()
            during = f"during-{uuid.uuid4().hex[:8]}"
            names.append(during)
            await write(sm, during)
            await asyncio.sleep(1.5)
            async with sm() as session:
                pending = (
                    await session.execute(
                        text("SELECT published_at IS NULL FROM outbox WHERE key = :k"), {"k": during}
                    )
                ).scalar()
            assert pending is True  # still in the outbox while the broker is down
            own.start()  # the consumer reconnects with a back-off: under load that takes a while
            await waited(lambda: _has(sm, [before, during]), 180, "after the restart")
            await asyncio.sleep(2)  # let any replayed duplicates arrive
            assert await applied(sm, [before, during]) == {before: 1, during: 1}
            assert relay.replays >= 1  # it noticed the broker had lost "before"
        finally:
            stop.set()
            await asyncio.gather(*tasks)
            own.stop()
            # the replay published this database's rows to ``own``, which is gone: the relays
            # of the next tests publish to the session broker (one database, one cluster)
            async with sm() as session, session.begin():
                await session.execute(text('UPDATE outbox SET "partition" = NULL, "offset" = NULL'))

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


async def write_many(sm: SM, events: list[tuple[str, str, int]]) -> list[str]:
    """(key, name, padding bytes) per event, in one transaction; returns the event ids."""
    async with sm() as session, session.begin():
        return [
            await emit(
                session,
                event_type=EVENT,
                key=key,
                topic=TOPIC,
                data={"name": name, "amount": "1.00", "padding": "x" * padding},
            )
            for key, name, padding in events
        ]


async def outbox_state(sm: SM, event_ids: list[str]) -> dict[str, bool]:
    """event id -> published (absent: the row is gone)."""
    async with sm() as session:
        rows = await session.execute(
            text("SELECT event_id, published_at IS NOT NULL FROM outbox WHERE event_id = ANY(:e)"),
            {"e": event_ids},
        )
        return {r[0]: r[1] for r in rows}


def parked_metric(relay: str, reason: str) -> float:
    return (
        REGISTRY.get_sample_value("roomtax_outbox_dead_letters_total", {"relay": relay, "reason": reason})
        or 0.0
    )


class TestUnpublishableRow:
    """Issue 10 item 1: one row the broker refuses must not stop every other key."""

    async def test_poison_row_parks_its_key_and_other_keys_flow(
        self, sm: SM, chassis_db: str, broker: BrokerProcess, client: httpx.AsyncClient
    ) -> None:
        run = uuid.uuid4().hex[:8]
        lodging_a, lodging_b = f"PR-A-{run}", f"PR-B-{run}"
        names = {n: f"{n}-{run}" for n in ("a1", "a2", "b1", "b2")}
        ids = await write_many(
            sm,
            [
                (lodging_a, names["a1"], 2_000_000),  # larger than the broker takes: never publishable
                (lodging_a, names["a2"], 0),
                (lodging_b, names["b1"], 0),
                (lodging_b, names["b2"], 0),
            ],
        )
        relay_name = f"poison-relay-{run}"
        before = parked_metric(relay_name, "too-large")
        stop = asyncio.Event()
        relay = OutboxRelay(dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name=relay_name)
        consumer = EventConsumer(
            name=f"pz-{run}",
            bootstrap=broker.bootstrap,
            topics=[TOPIC],
            sessionmaker=sm,
            handlers={EVENT: record},
        )
        tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
        try:
            await eventually(lambda: _has(sm, [names["b1"], names["b2"]]))
            await asyncio.sleep(1.0)  # give A's later event every chance to slip through
            assert await applied(sm, list(names.values())) == {names["b1"]: 1, names["b2"]: 1}
            assert await outbox_state(sm, ids) == {ids[0]: False, ids[1]: False, ids[2]: True, ids[3]: True}
            assert relay.parked == 1
            assert parked_metric(relay_name, "too-large") == before + 1

            listed = await client.get("/v1/outbox/dead-letters", headers=auth("agency-auditor"))
            assert listed.status_code == 200
            [letter] = [d for d in listed.json()["items"] if d["key"] == lodging_a]
            assert letter["event_id"] == ids[0]
            assert letter["reason"] == "too-large"
            assert letter["error"].startswith("MessageSizeTooLargeError")
            assert letter["held"] == 1  # a2 waits behind it: one lodging's order is kept
            assert letter["status"] == "open"
            assert letter["relay"] == relay_name
            assert letter["payload_bytes"] > 2_000_000

            admin = auth("agency-admin", client_id=f"admin-{run}")
            discarded = await client.post(
                f"/v1/outbox/dead-letters/{letter['id']}/discard",
                json={"note": "evidence pasted by mistake; the filer re-files"},
                headers=admin,
            )
            assert discarded.status_code == 200
            body = discarded.json()
            assert (body["status"], body["resolved_by"], body["held"]) == (
                "discarded",
                f"client:admin-{run}",
                0,
            )
            assert body["resolution_note"] == "evidence pasted by mistake; the filer re-files"
            await eventually(lambda: _has(sm, [names["a2"]]))
            assert await applied(sm, list(names.values())) == {names[n]: 1 for n in ("a2", "b1", "b2")}
            assert await outbox_state(sm, ids) == {ids[1]: True, ids[2]: True, ids[3]: True}  # a1 deleted
            again = await client.post(
                f"/v1/outbox/dead-letters/{letter['id']}/discard", json={"note": "twice"}, headers=admin
            )
            assert again.status_code == 409
        finally:
            stop.set()
            await asyncio.gather(*tasks)

    async def test_released_row_is_retried_and_its_key_follows_in_order(
        self, sm: SM, chassis_db: str, broker: BrokerProcess, client: httpx.AsyncClient
    ) -> None:
        """A relay whose limit is below the row parks it; after release, a relay that can
        send it publishes it first and then the key's later row."""
        run = uuid.uuid4().hex[:8]
        key = f"PR-R-{run}"
        ids = await write_many(sm, [(key, f"r1-{run}", 300_000), (key, f"r2-{run}", 0)])
        small = OutboxRelay(
            dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name=f"small-{run}", max_message_bytes=100_000
        )
        await run_until(small, lambda: _true(small.parked == 1))
        assert await outbox_state(sm, ids) == {ids[0]: False, ids[1]: False}
        listed = (await client.get("/v1/outbox/dead-letters", headers=auth("agency-admin"))).json()["items"]
        [letter] = [d for d in listed if d["key"] == key]
        released = await client.post(
            f"/v1/outbox/dead-letters/{letter['id']}/release",
            json={"note": "broker limit raised"},
            headers=auth("agency-admin", user_id=f"u-{run}"),
        )
        assert released.status_code == 200
        assert (released.json()["status"], released.json()["resolved_by"]) == ("released", f"user:u-{run}")
        relay = OutboxRelay(dsn=dsn(chassis_db), bootstrap=broker.bootstrap, name=f"big-{run}")
        await run_until(relay, lambda: _all_published(sm, ids))
        async with sm() as session:
            rows = (
                await session.execute(
                    text('SELECT "partition", "offset" FROM outbox WHERE event_id = ANY(:e) ORDER BY id'),
                    {"e": ids},
                )
            ).all()
        assert rows[0].partition == rows[1].partition
        assert rows[0].offset < rows[1].offset  # the released row went first
        assert relay.parked == 0

    async def test_only_agency_sees_and_only_admin_resolves(self, client: httpx.AsyncClient) -> None:
        operator = auth("operator", operator_id="op-1")
        assert (await client.get("/v1/outbox/dead-letters", headers=operator)).status_code == 403
        assert (await client.get("/v1/outbox/dead-letters", headers=auth("dashboard"))).status_code == 200
        note = {"note": "n"}
        r = await client.post("/v1/outbox/dead-letters/1/release", json=note, headers=auth("agency-auditor"))
        assert r.status_code == 403
        r = await client.post(
            "/v1/outbox/dead-letters/999999999/discard", json=note, headers=auth("agency-admin")
        )
        assert (r.status_code, r.headers["content-type"]) == (404, "application/problem+json")


class TestPermanentError:
    @pytest.mark.parametrize(
        ("exc", "reason"),
        [
            (MessageSizeTooLargeError("too big"), "too-large"),
            (RecordTooLargeError("too big"), "too-large"),
            (InvalidTopicError("bad name"), "invalid-topic"),
            (TypeError("not JSON serializable"), "serialization"),
            (UnicodeEncodeError("utf-8", "x", 0, 1, "surrogate"), "serialization"),
            (KafkaConnectionError("broker down"), None),
            (KafkaTimeoutError("slow"), None),
            (OSError("network"), None),
        ],
    )
    def test_classification(self, exc: BaseException, reason: str | None) -> None:
        assert permanent_error(exc) == reason


async def run_until(relay: OutboxRelay, check: Callable[[], Awaitable[bool]]) -> None:
    """Run the relay until ``check`` holds, then stop it."""
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    try:
        await eventually(check)
    finally:
        stop.set()
        await task


async def _all_published(sm: SM, ids: list[str]) -> bool:
    return set((await outbox_state(sm, ids)).values()) == {True} and len(await outbox_state(sm, ids)) == len(
        ids
    )


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


class TestRelayPlans:
    """The relay marks what it published by a plan made for the outbox as it is (issue 12)."""

    #: the same UPDATE as ``mark_published``'s, sent with parameters (prepared by asyncpg)
    PREPARED = (
        'UPDATE outbox AS o SET published_at = now(), "partition" = u.p, "offset" = u.o '
        "FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS u(id, p, o) WHERE o.id = u.id"
    )

    @staticmethod
    async def scans_marking_a_grown_outbox(chassis_db: str, *, prepared: bool) -> int:
        """Sequential scans of one marking on an outbox of 3,001 rows by a connection that
        marked ten times while the outbox held one row. On a temporary ``outbox`` (first on the
        search path, dropped with the transaction) that starts empty, as a new service's does."""
        import asyncpg

        conn = await asyncpg.connect(dsn(chassis_db))

        async def mark(offset: int) -> None:
            if prepared:
                await conn.execute(TestRelayPlans.PREPARED, [first], [0], [offset])
            else:
                await conn.execute(mark_published([first], [0], [offset]))

        try:
            async with conn.transaction():
                await conn.execute(
                    "CREATE TEMP TABLE outbox (LIKE public.outbox INCLUDING ALL) ON COMMIT DROP"
                )
                grow = (
                    "INSERT INTO outbox (event_id, topic, key, event_type, payload) "
                    "SELECT gen_random_uuid()::text, 't', 'k', 'e', '{}' FROM generate_series(1, $1)"
                )
                await conn.execute(grow, 1)
                first = await conn.fetchval("SELECT min(id) FROM outbox")
                for n in range(10):  # past the five custom plans after which a generic one is tried
                    await mark(n)
                await conn.execute(grow, 3_000)
                scans = "SELECT seq_scan FROM pg_stat_xact_all_tables WHERE relid = 'outbox'::regclass"
                before = await conn.fetchval(scans)
                await mark(77)
                row = await conn.fetchrow(
                    'SELECT "partition", "offset", published_at FROM outbox WHERE id = $1', first
                )
                assert (row["partition"], row["offset"], row["published_at"] is not None) == (0, 77, True)
                return int(await conn.fetchval(scans) - before)
        finally:
            await conn.close()

    async def test_marking_published_reads_the_rows_by_index_once_the_outbox_grew(
        self, chassis_db: str
    ) -> None:
        assert await self.scans_marking_a_grown_outbox(chassis_db, prepared=False) == 0
        # what the relay did before: the generic plan made on one row scans all 3,001
        assert await self.scans_marking_a_grown_outbox(chassis_db, prepared=True) == 1

    def test_marking_writes_only_integers_into_its_text(self) -> None:
        assert mark_published([5, 6], [0, 1], [10, 11]).endswith(
            "FROM unnest('{5,6}'::bigint[], '{0,1}'::int[], '{10,11}'::bigint[]) "
            "AS u(id, p, o) WHERE o.id = u.id"
        )
        with pytest.raises(ValueError, match="invalid literal for int"):
            mark_published(["1); DROP TABLE outbox; --"], [0], [0])  # type: ignore[list-item]
