"""Transactional outbox and its relay to Kafka.

:func:`emit` writes the CloudEvent into the ``outbox`` table in the caller's
transaction, so the state change and its event commit together, and asks
PostgreSQL to ``NOTIFY outbox`` on commit.

:class:`OutboxRelay` LISTENs on that channel, claims unpublished rows with
``FOR UPDATE SKIP LOCKED`` (several relays may run), publishes them with
``acks=all`` and marks them sent in the same transaction that claimed them. A
broker outage only delays events: the claim rolls back and is retried.

The broker in development (Tansu, memory storage) loses every message when it
restarts, so the outbox -- not the broker -- is the durable log: published rows
are kept for a retention window with the partition and offset they got. When
the relay sees a partition whose end offset is behind what it produced, it
re-publishes the window; consumers drop duplicates through their inbox. The
same path lets an operator replay a topic (:func:`request_replay`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from pydantic import BaseModel
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import metrics
from taxcore.events import CONTRACTS, CloudEvent

log = logging.getLogger("servicekit.outbox")
CHANNEL = "outbox"
PURGE_INTERVAL = 3600.0  # seconds between deletions of rows past the retention window
IDEMPOTENCY_RETENTION = timedelta(days=7)  # how long an Idempotency-Key replays its response


def _source(session: AsyncSession) -> str:
    return f"/roomtax/{session.info.get('service', 'unknown')}"


def _envelope(
    session: AsyncSession,
    *,
    event_type: str,
    key: str,
    data: BaseModel | Mapping[str, Any],
    subject: str | None,
    topic: str | None,
    event_id: str | None,
) -> dict[str, str]:
    """The outbox row (bind parameters) of one event."""
    if topic is None:
        if event_type not in CONTRACTS:
            raise ValueError(f"no topic registered for event type {event_type!r}")
        topic = CONTRACTS[event_type][0]
    payload = data.model_dump(mode="json") if isinstance(data, BaseModel) else dict(data)
    eid = event_id or str(uuid.uuid4())
    envelope = CloudEvent(
        id=eid,
        source=_source(session),
        type=event_type,
        subject=subject or key,
        time=datetime.now(UTC),
        data=payload,
    )
    return {"e": eid, "t": topic, "k": key, "y": event_type, "p": envelope.model_dump_json(exclude_none=True)}


async def emit(
    session: AsyncSession,
    *,
    event_type: str,
    key: str,
    data: BaseModel | Mapping[str, Any],
    subject: str | None = None,
    topic: str | None = None,
    event_id: str | None = None,
) -> str:
    """Queue an event in the caller's transaction; returns the event id.

    ``topic`` defaults to the one registered for ``event_type`` in
    :data:`taxcore.events.CONTRACTS`.
    """
    row = _envelope(
        session, event_type=event_type, key=key, data=data, subject=subject, topic=topic, event_id=event_id
    )
    await session.execute(
        text(
            "INSERT INTO outbox (event_id, topic, key, event_type, payload) "
            "VALUES (:e, :t, :k, :y, CAST(:p AS jsonb))"
        ),
        row,
    )
    await session.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})
    return row["e"]


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """One event for :func:`emit_many` (the keyword arguments of :func:`emit`)."""

    event_type: str
    key: str
    data: BaseModel | Mapping[str, Any]
    subject: str | None = None
    topic: str | None = None
    event_id: str | None = None


async def emit_many(session: AsyncSession, events: Sequence[OutboxEvent]) -> list[str]:
    """Queue many events in the caller's transaction with one INSERT; returns their ids.

    Same rows as :func:`emit` called once per event (in order), for bulk use-cases
    (a 10,000-row remittance schedule) where one round trip per event is too slow.
    """
    if not events:
        return []
    rows = [
        _envelope(
            session,
            event_type=ev.event_type,
            key=ev.key,
            data=ev.data,
            subject=ev.subject,
            topic=ev.topic,
            event_id=ev.event_id,
        )
        for ev in events
    ]
    await session.execute(
        text(
            "INSERT INTO outbox (event_id, topic, key, event_type, payload) "
            "SELECT e, t, k, y, CAST(p AS jsonb) FROM unnest("
            "CAST(:e AS text[]), CAST(:t AS text[]), CAST(:k AS text[]), CAST(:y AS text[]), "
            "CAST(:p AS text[])) WITH ORDINALITY AS u(e, t, k, y, p, n) ORDER BY n"
        ),
        {name: [r[name] for r in rows] for name in ("e", "t", "k", "y", "p")},
    )
    await session.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})
    return [r["e"] for r in rows]


async def request_replay(
    session: AsyncSession, *, topic: str | None = None, since: datetime | None = None
) -> int:
    """Mark published rows for re-publication (operator replay of a topic)."""
    clauses = ["published_at IS NOT NULL"]
    params: dict[str, Any] = {}
    if topic:
        clauses.append("topic = :t")
        params["t"] = topic
    if since:
        clauses.append("created_at >= :s")
        params["s"] = since
    result = await session.execute(
        text(f"UPDATE outbox SET published_at = NULL WHERE {' AND '.join(clauses)}"), params
    )
    await session.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


class OutboxRelay:
    """Publishes outbox rows to Kafka, woken by LISTEN/NOTIFY."""

    def __init__(
        self,
        *,
        dsn: str,
        bootstrap: str,
        name: str = "relay",
        batch_size: int = 500,
        retention: timedelta = timedelta(days=14),
        check_interval: float = 2.0,
    ) -> None:
        self.dsn = dsn
        self.bootstrap = bootstrap
        self.name = name
        self.batch_size = batch_size
        self.retention = retention
        self.check_interval = check_interval
        self._wake = asyncio.Event()
        self._partitions: set[tuple[str, int]] = set()  # partitions this relay produced to
        self._ends: dict[tuple[str, int], int] = {}  # their end offsets at the last check
        self._producer: AIOKafkaProducer | None = None
        self._offsets: AIOKafkaConsumer | None = None  # reads partition end offsets for check_broker
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self.published = 0
        self.replays = 0

    async def _ensure_producer(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap,
                acks="all",
                enable_idempotence=False,  # Tansu does not support InitProducerId
                linger_ms=2,
                request_timeout_ms=10_000,
                max_batch_size=1_048_576,
                client_id=f"roomtax-{self.name}",
            )
            try:
                await producer.start()
            except BaseException:
                with contextlib.suppress(Exception):
                    await producer.stop()
                raise
            self._producer = producer
        return self._producer

    async def _drop_producer(self) -> None:
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.stop()
            self._producer = None
        if self._offsets is not None:
            with contextlib.suppress(Exception):
                await self._offsets.stop()
            self._offsets = None

    async def _listen(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            return
        self._listener = await asyncpg.connect(
            self.dsn, server_settings={"application_name": f"{self.name}-listen"}
        )
        await self._listener.add_listener(CHANNEL, lambda *_: self._wake.set())

    async def _load_partitions(self) -> None:
        assert self._pool is not None
        rows = await self._pool.fetch(
            'SELECT DISTINCT topic, "partition" FROM outbox '
            'WHERE published_at IS NOT NULL AND "partition" IS NOT NULL'
        )
        self._partitions = {(r["topic"], r["partition"]) for r in rows}

    async def publish_batch(self) -> int:
        """Claim, publish and mark one batch; returns how many rows were published."""
        assert self._pool is not None
        producer = await self._ensure_producer()
        lost: list[tuple[str, int]] = []
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT id, topic, key, payload FROM outbox WHERE published_at IS NULL "
                "ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
                self.batch_size,
            )
            if not rows:
                return 0
            futures = []
            for row in rows:
                payload = row["payload"]
                envelope = json.loads(payload) if isinstance(payload, str) else dict(payload)
                envelope["sequence"] = row["id"]
                futures.append(
                    await producer.send(
                        row["topic"],
                        value=json.dumps(envelope, separators=(",", ":")).encode(),
                        key=row["key"].encode(),
                    )
                )
            results = await asyncio.gather(*futures)
            ids, partitions, offsets = [], [], []
            base: dict[tuple[str, int], int] = {}
            for row, meta in zip(rows, results, strict=True):
                ids.append(row["id"])
                partitions.append(meta.partition)
                offsets.append(meta.offset)
                tp = (row["topic"], meta.partition)
                self._partitions.add(tp)
                base[tp] = min(meta.offset, base.get(tp, meta.offset))
            # A healthy partition never hands out an offset below an end offset seen before.
            lost = [tp for tp, first in base.items() if first < self._ends.get(tp, 0)]
            await conn.execute(
                'UPDATE outbox AS o SET published_at = now(), "partition" = u.p, "offset" = u.o '
                "FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS u(id, p, o) WHERE o.id = u.id",
                ids,
                partitions,
                offsets,
            )
        self.published += len(rows)
        metrics.OUTBOX_PUBLISHED.labels(self.name).inc(len(rows))
        if lost:
            await self.replay_window(f"offsets restarted below the known end on {sorted(lost)}")
        return len(rows)

    async def replay_window(self, reason: str) -> None:
        """Re-publish every row of the retention window (the broker lost it)."""
        assert self._pool is not None
        rows = await self._pool.fetch(
            'UPDATE outbox SET published_at = NULL, "partition" = NULL, "offset" = NULL '
            "WHERE published_at IS NOT NULL AND created_at > now() - $1::interval RETURNING id",
            self.retention,
        )
        self._ends.clear()
        self.replays += 1
        metrics.OUTBOX_REPLAYS.labels(self.name).inc()
        log.warning("outbox replay of %d events: %s", len(rows), reason)
        self._wake.set()

    async def check_broker(self) -> None:
        """Has the broker lost what this relay published? Then re-publish the window.

        Signals: a topic we produced to no longer exists, or a partition's end offset
        went *down* since the last check (a log never shrinks at its end; retention
        only moves its start). Offsets aiokafka reports per record are not compared
        with end offsets: Tansu reports batch offsets that run past the partition end.
        """
        if not self._partitions:
            return
        producer = await self._ensure_producer()
        client = producer.client
        await client.force_metadata_update()

        tps = [TopicPartition(t, p) for (t, p) in sorted(self._partitions)]
        missing = sorted({tp.topic for tp in tps if client.cluster.partitions_for_topic(tp.topic) is None})
        if missing:
            await self.replay_window(f"topics missing on the broker: {missing}")
            return
        if self._offsets is None:
            consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
            try:
                await consumer.start()
            except BaseException:
                await consumer.stop()
                raise
            self._offsets = consumer  # kept across checks; dropped with the producer on an error
        ends = await asyncio.wait_for(self._offsets.end_offsets(tps), timeout=5)
        now = {(tp.topic, tp.partition): int(end) for tp, end in ends.items()}
        shrunk = sorted(tp for tp, end in now.items() if end < self._ends.get(tp, 0))
        if shrunk:
            await self.replay_window(f"partition end offsets went down on {shrunk}")
            return
        self._ends = now

    async def purge(self) -> int:
        """Delete published rows past the retention window, and expired Idempotency-Keys.

        A key is honoured for :data:`IDEMPOTENCY_RETENTION` (a client retries within
        minutes or hours, not weeks); after that the same key is a new request.
        """
        assert self._pool is not None
        result: str = await self._pool.execute(
            "DELETE FROM outbox WHERE published_at IS NOT NULL AND created_at < now() - $1::interval",
            self.retention,
        )
        await self._pool.execute(
            "DELETE FROM idempotency_keys WHERE created_at < now() - $1::interval", IDEMPOTENCY_RETENTION
        )
        return int(result.split()[-1])

    async def run(self, stop: asyncio.Event) -> None:
        self._pool = await asyncpg.create_pool(
            self.dsn, min_size=1, max_size=2, server_settings={"application_name": self.name}
        )
        await self._load_partitions()
        backoff = 0.2
        last_check = 0.0
        last_purge = 0.0
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set():
                try:
                    await self._listen()
                    self._wake.clear()
                    published = await self.publish_batch()
                    backoff = 0.2
                    if loop.time() - last_check > self.check_interval:  # under load too
                        last_check = loop.time()
                        await self.check_broker()
                    if published or self._wake.is_set():
                        continue
                    if loop.time() - last_purge > PURGE_INTERVAL:
                        last_purge = loop.time()
                        purged = await self.purge()
                        if purged:
                            log.info("outbox: purged %d events older than the retention window", purged)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._first(stop), timeout=self.check_interval)
                except (
                    KafkaError,
                    OSError,
                    asyncpg.PostgresError,
                    TimeoutError,
                    asyncpg.InterfaceError,
                ) as exc:
                    log.warning("relay %s: %s; retrying in %.1fs", self.name, exc, backoff)
                    metrics.OUTBOX_ERRORS.labels(self.name).inc()
                    await self._drop_producer()
                    if self._listener is not None:
                        with contextlib.suppress(Exception):
                            await self._listener.close()
                        self._listener = None
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=backoff)
                    backoff = min(backoff * 2, 5.0)
        finally:
            await self._drop_producer()
            if self._listener is not None:
                with contextlib.suppress(Exception):
                    await self._listener.close()
            await self._pool.close()

    async def _first(self, stop: asyncio.Event) -> None:
        wake = asyncio.ensure_future(self._wake.wait())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({wake, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            wake.cancel()
            stopped.cancel()
