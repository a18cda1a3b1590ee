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

A row the broker can never accept as it is (larger than its message size, not
serializable) must not stop the others: the relay parks it in
``outbox_dead_letters`` with its error (metric ``roomtax_outbox_dead_letters_total``),
holds the later rows of the same key behind it (one lodging's events stay in
order) and keeps publishing every other key. The agency sees parked rows at
``GET /v1/outbox/dead-letters`` (:mod:`servicekit.outbox_api`, mounted by every
service), and an agency-admin releases (:func:`release_dead_letter`) or discards
(:func:`discard_dead_letter`) them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import (
    InvalidTopicError,
    KafkaError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    RecordTooLargeError,
)
from aiokafka.structs import RecordMetadata
from pydantic import BaseModel
from pydantic_core import to_json
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import kafka, metrics, telemetry
from taxcore.events import CONTRACTS, SPEC_VERSION, EventData

log = logging.getLogger("servicekit.outbox")
CHANNEL = "outbox"
PURGE_INTERVAL = 3600.0  # seconds between deletions of rows past the retention window
IDEMPOTENCY_RETENTION = timedelta(days=7)  # how long an Idempotency-Key replays its response


class CurrentTrace:
    """``traceparent``'s default: the current span's (:func:`telemetry.current_traceparent`)."""


CURRENT_TRACE = CurrentTrace()
#: an event's trace: a W3C ``traceparent``, none, or the current span's when it is written
Traceparent = str | None | CurrentTrace


def service_of(session: AsyncSession) -> str:
    """The service a session writes for (``make_sessionmaker``): its events' source."""
    return str(session.info.get("service", "unknown"))


def _envelope(
    service: str,
    *,
    event_type: str,
    key: str,
    data: BaseModel | Mapping[str, Any],
    subject: str | None,
    topic: str | None,
    event_id: str | None,
    traceparent: Traceparent = CURRENT_TRACE,
) -> tuple[dict[str, str | None], bytes]:
    """The outbox row (bind parameters) of one event without its payload, and the payload
    (the CloudEvent) as pydantic-core writes it: UTF-8 JSON (``traceparent``: of the span it
    is emitted in, read now unless the caller read it)."""
    if topic is None:
        if event_type not in CONTRACTS:
            raise ValueError(f"no topic registered for event type {event_type!r}")
        topic = CONTRACTS[event_type][0]
    if isinstance(data, BaseModel):
        payload: Mapping[str, Any] = data.model_dump(mode="json")
    else:  # encoded below and not kept: a dict as it is (a schedule's 10,000 payloads)
        payload = data if type(data) is dict else dict(data)
    eid = event_id or str(uuid.uuid4())
    # built from typed values here (the payload already validated by its contract, or JSON
    # values): no model, the JSON ``CloudEvent(...).model_dump_json(exclude_none=True)`` gives
    # (its fields' order, pydantic-core's encoder; ``test_outbox_envelope`` compares both)
    envelope = {
        "specversion": SPEC_VERSION,
        "id": eid,
        "source": f"/roomtax/{service}",
        "type": event_type,
        "subject": subject or key,
        "time": datetime.now(UTC),
        "datacontenttype": "application/json",
        "data": payload,
    }
    row: dict[str, str | None] = {
        "e": eid,
        "t": topic,
        "k": key,
        "y": event_type,
        # the trace continues in the consumers
        "tp": telemetry.current_traceparent() if isinstance(traceparent, CurrentTrace) else traceparent,
    }
    return row, to_json(envelope)


def typed(event: EventData) -> tuple[str, str]:
    """The type and topic an event's contract class carries (``taxcore.events.contract``)."""
    model = type(event)
    if "event_type" not in vars(model):
        raise TypeError(f"{model.__qualname__} is not an event contract (no @contract of its own)")
    return model.event_type, model.topic


#: ``NOTIFY outbox`` in the same statement as the INSERT (a CTE evaluated once): one round
#: trip per emit instead of two. PostgreSQL delivers the notification at commit, once per
#: transaction however many statements raised it.
_NOTIFY = "WITH notified AS (SELECT pg_notify(:c, '')) "
_INTO = "INSERT INTO outbox (event_id, topic, key, event_type, payload, traceparent) "


def _one_row(payload: str) -> str:
    """One event's row, its columns as plain parameters (:func:`emit`, :data:`QUEUE_ONE_CTES`),
    the payload's parameter as ``payload`` reads it."""
    return _INTO + f"SELECT :e, :t, :k, :y, {payload}, :tp FROM notified"


_ONE_ROW = _one_row("CAST(:p AS jsonb)")
_PAYLOAD_BYTES = "CAST(convert_from(CAST(:p AS bytea), 'UTF8') AS jsonb)"
_INSERT_ONE = text(_NOTIFY + _ONE_ROW)
#: The CTEs that queue events and NOTIFY, to put in front of another statement so that a
#: row and its events are written in ONE round trip (parameters: :func:`queue_params`).
#: PostgreSQL runs a data-modifying CTE whether or not the statement reads it.
QUEUE_CTES = (
    _NOTIFY.removesuffix(" ") + f", queued AS ({_INTO}"
    "SELECT e, t, k, y, CAST(p AS jsonb), tp FROM notified, unnest("
    "CAST(:e AS text[]), CAST(:t AS text[]), CAST(:k AS text[]), CAST(:y AS text[]), "
    "CAST(:p AS text[]), CAST(:tp AS text[])) WITH ORDINALITY AS u(e, t, k, y, p, tp, n) ORDER BY n) "
)
_INSERT_MANY = text(QUEUE_CTES + "SELECT 1")
#: :data:`QUEUE_CTES` for exactly ONE event (parameters: :func:`queue_one_params`): its columns
#: as plain parameters, as :func:`emit` writes them, not six one-element arrays that the
#: driver encodes and the server unnests and sorts (issue 12: the declaration POST's insert);
#: the payload as the UTF-8 bytes of its JSON (not decoded to a ``str`` to be encoded again)
QUEUE_ONE_CTES = _NOTIFY.removesuffix(" ") + f", queued AS ({_one_row(_PAYLOAD_BYTES)}) "


async def emit(
    session: AsyncSession,
    event: EventData | None = None,
    *,
    key: str,
    event_type: str | None = None,
    data: BaseModel | Mapping[str, Any] | None = None,
    subject: str | None = None,
    topic: str | None = None,
    event_id: str | None = None,
) -> str:
    """Queue an event in the caller's transaction; returns the event id.

    ``emit(session, PaymentReceived(...), key=account)``: the contract class gives the
    type and topic. The older form ``emit(session, event_type=..., key=..., data=...)``
    still works; its ``topic`` defaults to the one registered for ``event_type`` in
    :data:`taxcore.events.CONTRACTS`.
    """
    if event is not None:
        if event_type is not None or data is not None:
            raise TypeError("emit takes an event contract, or event_type and data, not both")
        event_type, topic = typed(event)
        data = event
    if event_type is None or data is None:
        raise TypeError("emit needs an event contract (or event_type and data)")
    fields, payload = _envelope(
        service_of(session),
        event_type=event_type,
        key=key,
        data=data,
        subject=subject,
        topic=topic,
        event_id=event_id,
    )
    row = {**fields, "p": payload.decode()}
    held: list[dict[str, str | None]] | None = session.info.get(_HELD)
    if held is not None:
        held.append(row)  # written with the transaction's other events (:func:`holding`)
    else:
        await session.execute(_INSERT_ONE, {**row, "c": CHANNEL})
    return str(row["e"])


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """One event for :func:`emit_many` (the keyword arguments of :func:`emit`)."""

    event_type: str
    key: str
    data: BaseModel | Mapping[str, Any]
    subject: str | None = None
    topic: str | None = None
    event_id: str | None = None
    #: the trace the event continues; by default the current span's when it is written. A
    #: batch's deferred work sets it to the trace of the event that caused this one.
    traceparent: Traceparent = CURRENT_TRACE

    @classmethod
    def of(
        cls,
        event: EventData,
        *,
        key: str,
        subject: str | None = None,
        event_id: str | None = None,
        traceparent: Traceparent = CURRENT_TRACE,
    ) -> OutboxEvent:
        """The event of a contract (its class gives the type and topic)."""
        event_type, topic = typed(event)
        return cls(
            event_type, key, event, subject=subject, topic=topic, event_id=event_id, traceparent=traceparent
        )


async def emit_many(session: AsyncSession, events: Sequence[OutboxEvent]) -> list[str]:
    """Queue many events in the caller's transaction with one INSERT; returns their ids.

    Same rows as :func:`emit` called once per event (in order), for bulk use-cases
    (a 10,000-row remittance schedule) where one round trip per event is too slow.
    """
    if not events:
        return []
    return await emit_rows(session, _rows(service_of(session), events))


OutboxRow = dict[str, str | None]


def outbox_row(service: str, event: OutboxEvent, *, traceparent: str | None) -> OutboxRow:
    """One event's outbox row built now, for :func:`emit_rows` to write later: what
    :func:`emit_many` writes for it. A bulk use-case builds its rows where it computes its
    events (a schedule's worker thread: off the event loop, and no event object waits for
    the write); such a thread has no span of its own, so the caller passes the
    ``traceparent`` it read on the loop (:func:`servicekit.telemetry.current_traceparent`)."""
    row, payload = _event_json(service, event, traceparent=traceparent)
    return {**row, "p": payload.decode()}


def _event_json(
    service: str, event: OutboxEvent, *, traceparent: Traceparent
) -> tuple[dict[str, str | None], bytes]:
    return _envelope(
        service,
        event_type=event.event_type,
        key=event.key,
        data=event.data,
        subject=event.subject,
        topic=event.topic,
        event_id=event.event_id,
        traceparent=traceparent,
    )


async def emit_rows(session: AsyncSession, rows: Sequence[OutboxRow]) -> list[str]:
    """Queue events already built as rows (:func:`outbox_row`), in order, with one INSERT in
    the caller's transaction (or held, :func:`holding`); returns their ids."""
    if not rows:
        return []
    held: list[OutboxRow] | None = session.info.get(_HELD)
    if held is not None:
        held.extend(rows)  # written with the transaction's other events (:func:`holding`)
        return [str(r["e"]) for r in rows]
    params = _params(rows)
    await session.execute(_INSERT_MANY, params)
    return list(params["e"])


#: one event's row as :func:`copy_records` writes it: the values of :data:`RECORD_COLUMNS`
OutboxRecord = tuple[str, str, str, str, str, str | None]
#: the columns of an :data:`OutboxRecord`, in its order (the server fills the others)
RECORD_COLUMNS = ("event_id", "topic", "key", "event_type", "payload", "traceparent")


def outbox_record(service: str, event: OutboxEvent, *, traceparent: str | None) -> OutboxRecord:
    """:func:`outbox_row` as a COPY record (:func:`copy_records`): the same values, no dict."""
    row, payload = _event_json(service, event, traceparent=traceparent)
    return (row["e"], row["t"], row["k"], row["y"], payload.decode(), row["tp"])  # type: ignore[return-value]


async def copy_records(conn: asyncpg.Connection, records: Sequence[OutboxRecord]) -> None:
    """Write events built as records (:func:`outbox_record`) with COPY, in order, in the
    transaction already open on ``conn`` (the driver connection of the caller's session), and
    ``NOTIFY outbox`` on its commit: the rows :func:`emit_rows` writes, without the INSERT's
    six arrays encoded by the driver and unnested by the server (a schedule's 10,000 events).
    Not for a session that holds its events (:func:`holding`): they are written now."""
    if records:
        await conn.copy_records_to_table("outbox", columns=RECORD_COLUMNS, records=records)
        await conn.execute(f"SELECT pg_notify('{CHANNEL}', '')")


#: where :func:`holding` keeps the rows of a transaction's events until :func:`write_held`
_HELD = "servicekit.outbox.held"


@contextlib.contextmanager
def holding(session: AsyncSession) -> Iterator[None]:
    """Within: :func:`emit` and :func:`emit_many` keep their rows (built as they are called,
    in order) for :func:`write_held` to write in one statement before the transaction
    commits. The consumer holds a batch's events so: no transaction reads its own outbox
    rows, and the relay sees them only after the commit either way."""
    session.info[_HELD] = []
    try:
        yield
    finally:
        session.info.pop(_HELD, None)


async def write_held(session: AsyncSession) -> None:
    """Write the events held so far (:func:`holding`), in the order they were emitted."""
    held: list[dict[str, str | None]] | None = session.info.get(_HELD)
    if held:
        rows = list(held)
        held.clear()
        await session.execute(_INSERT_MANY, _params(rows))


def queue_params(service: str, events: Sequence[OutboxEvent]) -> dict[str, Any]:
    """The bind parameters of :data:`QUEUE_CTES` for ``events`` (in order) of ``service``
    (:func:`service_of` a session)."""
    return _params(_rows(service, events))


def queue_one_params(service: str, event: OutboxEvent) -> dict[str, Any]:
    """The bind parameters of :data:`QUEUE_ONE_CTES` for ``event`` of ``service``: the row
    :func:`queue_params` would write for it alone (its payload as bytes)."""
    row, payload = _event_json(service, event, traceparent=event.traceparent)
    return {**row, "p": payload, "c": CHANNEL}


def _params(rows: Sequence[Mapping[str, str | None]]) -> dict[str, Any]:
    params: dict[str, Any] = {name: [r[name] for r in rows] for name in ("e", "t", "k", "y", "p", "tp")}
    return {**params, "c": CHANNEL}


def _rows(service: str, events: Sequence[OutboxEvent]) -> list[dict[str, str | None]]:
    current = telemetry.current_traceparent()  # one span: the same for every event without its own
    return [
        outbox_row(
            service, ev, traceparent=current if isinstance(ev.traceparent, CurrentTrace) else ev.traceparent
        )
        for ev in events
    ]


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


PERMANENT_KAFKA_ERRORS: dict[type[Exception], str] = {
    MessageSizeTooLargeError: "too-large",
    RecordTooLargeError: "too-large",
    RecordListTooLargeError: "too-large",
    InvalidTopicError: "invalid-topic",
}


def permanent_error(exc: BaseException) -> str | None:
    """The dead-letter reason when ``exc`` fails the same way on every retry, else ``None``.

    A record larger than the broker (or the relay's ``max_message_bytes``) accepts, an
    invalid topic name, or a payload that cannot be encoded: retrying cannot help, and
    retrying forever would block every row behind it. Everything else (a broker or
    database outage, a timeout) is transient and retried with backoff.
    """
    for kind, reason in PERMANENT_KAFKA_ERRORS.items():
        if isinstance(exc, kind):
            return reason
    if isinstance(exc, TypeError | ValueError | UnicodeError) and not isinstance(exc, KafkaError):
        return "serialization"
    return None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def _message(row: asyncpg.Record) -> bytes:
    """The Kafka value of an outbox row: its envelope plus the stream sequence and, when
    the row was emitted inside a trace, the CloudEvents ``traceparent`` extension."""
    payload = row["payload"]
    envelope = json.loads(payload) if isinstance(payload, str) else dict(payload)
    envelope["sequence"] = row["id"]
    if row["traceparent"]:
        envelope["traceparent"] = row["traceparent"]
    return json.dumps(envelope, separators=(",", ":")).encode()


async def _send(producer: AIOKafkaProducer, row: asyncpg.Record, value: bytes) -> asyncio.Future[Any]:
    """Send one outbox row in the trace it was emitted in (:mod:`servicekit.telemetry`)."""
    traceparent = row["traceparent"]
    with telemetry.attached(traceparent):
        future: asyncio.Future[Any] = await producer.send(
            row["topic"], value=value, key=row["key"].encode(), headers=telemetry.kafka_headers(traceparent)
        )
    return future


async def release_dead_letter(session: AsyncSession, *, dead_letter_id: int, actor: str, note: str) -> bool:
    """Retry a parked row: the relay claims it again (and its key's later rows after it).

    Returns ``False`` when there is no open dead letter with that id. If it fails
    the same way again it is parked again, as a new dead letter.
    """
    done = await _resolve(
        session, dead_letter_id=dead_letter_id, resolution="released", actor=actor, note=note
    )
    await session.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})
    return done


async def discard_dead_letter(session: AsyncSession, *, dead_letter_id: int, actor: str, note: str) -> bool:
    """Never publish a parked row: its outbox row is deleted (the dead letter keeps the
    payload, who discarded it, when and why), and its key's later rows flow again."""
    row = (
        await session.execute(
            text("SELECT outbox_id FROM outbox_dead_letters WHERE id = :i AND resolution IS NULL FOR UPDATE"),
            {"i": dead_letter_id},
        )
    ).first()
    if row is None:
        return False
    await session.execute(
        text("DELETE FROM outbox WHERE id = :o AND published_at IS NULL"), {"o": row.outbox_id}
    )
    await _resolve(session, dead_letter_id=dead_letter_id, resolution="discarded", actor=actor, note=note)
    await session.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})
    return True


async def _resolve(
    session: AsyncSession, *, dead_letter_id: int, resolution: str, actor: str, note: str
) -> bool:
    result = await session.execute(
        text(
            "UPDATE outbox_dead_letters SET resolution = :r, resolved_at = now(), resolved_by = :a, "
            "resolution_note = :n WHERE id = :i AND resolution IS NULL RETURNING id"
        ),
        {"r": resolution, "a": actor, "n": note, "i": dead_letter_id},
    )
    if result.first() is None:
        return False
    log.warning("outbox dead letter %d %s by %s: %s", dead_letter_id, resolution, actor, note)
    return True


def mark_published(ids: Sequence[int], partitions: Sequence[int], offsets: Sequence[int]) -> str:
    """The relay's UPDATE marking what the broker acknowledged (each row its partition and offset),
    its integers written into its text: a simple query, planned each time for the outbox as it is.

    Sent with parameters, asyncpg prepares it, and after five executions PostgreSQL settles on a
    generic plan costed on the table's size then: on a new service's outbox (a page or two) a
    hash join over a sequential scan, a plan that stayed while the outbox grew (nothing replaces it
    until an ANALYZE of the table; never where autovacuum is off). Under the event-lag bench's max
    rate filing's relay then read the whole outbox for every batch it marked: 52 million rows in
    7,700 scans in four minutes, on CPU in a third of pg_stat_activity's samples, the more the
    longer it ran (bench/README.md, session 13). Planned each time it is an index lookup per row
    at any size. (``plan_cache_mode = force_custom_plan`` on the relay's connections would do that
    for every statement, and the claim would be planned as a bitmap scan of the unpublished-rows
    index, which visits every dead entry of that index where vacuum has not run.)"""

    def array(values: Sequence[int], sql_type: str) -> str:  # int() refuses anything but an integer
        return f"'{{{','.join(str(int(v)) for v in values)}}}'::{sql_type}[]"

    return (
        'UPDATE outbox AS o SET published_at = now(), "partition" = u.p, "offset" = u.o '
        f"FROM unnest({array(ids, 'bigint')}, {array(partitions, 'int')}, {array(offsets, 'bigint')}) "
        "AS u(id, p, o) WHERE o.id = u.id"
    )


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
        max_message_bytes: int = 1_048_576,
        kafka_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.dsn = dsn
        self.bootstrap = bootstrap
        self.name = name
        self.batch_size = batch_size
        self.retention = retention
        self.check_interval = check_interval
        self.max_message_bytes = max_message_bytes
        self.kafka_options = dict(kafka_options or {})  # TLS/SASL: servicekit.kafka.client_options
        self._wake = asyncio.Event()
        self._partitions: set[tuple[str, int]] = set()  # partitions this relay produced to
        self._ends: dict[tuple[str, int], int] = {}  # their end offsets at the last check
        # the highest offset (and its outbox row id) the broker gave a row of ours, per partition,
        # loaded from the outbox at start: it survives a restart of the relay
        self._last: dict[tuple[str, int], tuple[int, int]] = {}
        self._held: dict[tuple[str, int], tuple[int, int]] = {}  # (offset, end) verified on the broker
        self._producer: AIOKafkaProducer | None = None
        self._offsets: AIOKafkaConsumer | None = None  # reads partition end offsets for check_broker
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self.published = 0
        self.parked = 0
        self.replays = 0

    async def _ensure_producer(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap,
                acks="all",
                enable_idempotence=False,  # Tansu does not support InitProducerId
                linger_ms=2,
                request_timeout_ms=10_000,
                max_batch_size=max(1_048_576, self.max_message_bytes),
                max_request_size=self.max_message_bytes,  # larger records are parked, see publish_batch
                client_id=f"roomtax-{self.name}",
                **self.kafka_options,
            )
            try:
                await producer.start()
            except BaseException:
                await kafka.stop_quietly(producer)
                raise
            self._producer = producer
        return self._producer

    async def _drop_producer(self) -> None:
        if self._producer is not None:
            await kafka.stop_quietly(self._producer)
            self._producer = None
        if self._offsets is not None:
            await kafka.stop_quietly(self._offsets)
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
            'SELECT DISTINCT ON (topic, "partition") topic, "partition", "offset", id FROM outbox '
            'WHERE published_at IS NOT NULL AND "partition" IS NOT NULL AND "offset" IS NOT NULL '
            'ORDER BY topic, "partition", "offset" DESC'
        )
        self._partitions = {(r["topic"], r["partition"]) for r in rows}
        self._last = {(r["topic"], r["partition"]): (r["offset"], r["id"]) for r in rows}

    async def publish_batch(self) -> int:
        """Claim, publish and mark one batch; returns how many rows were published or parked.

        A row that can never be published as it is (:func:`permanent_error`) is parked in
        ``outbox_dead_letters`` and the rest of the batch goes on; the later rows of its
        key are not claimed until the parked row is released or discarded, so one key's
        order is kept and no other key waits. Any other error rolls the claim back and
        the relay retries with backoff (what was already sent is sent again; consumers'
        inboxes drop the duplicates).
        """
        assert self._pool is not None
        producer = await self._ensure_producer()
        lost: list[tuple[str, int]] = []
        parked: list[tuple[int, str, str, str]] = []  # (outbox id, key, reason, error)
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT o.id, o.topic, o.key, o.payload, o.traceparent FROM outbox AS o "
                "WHERE o.published_at IS NULL "
                "AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d WHERE d.resolution IS NULL "
                "AND d.key = o.key AND d.outbox_id <= o.id) "
                "ORDER BY o.id LIMIT $1 FOR UPDATE OF o SKIP LOCKED",
                self.batch_size,
            )
            if not rows:
                return 0
            blocked: set[str] = set()  # keys parked in this batch: their later rows wait

            def park(row: asyncpg.Record, exc: BaseException) -> None:
                reason = permanent_error(exc)
                if reason is None:
                    raise exc  # transient: the claim rolls back, run() retries with backoff
                parked.append((row["id"], row["key"], reason, _describe(exc)))
                blocked.add(row["key"])

            sent: list[tuple[asyncpg.Record, bytes, asyncio.Future[Any]]] = []
            for row in rows:
                if row["key"] in blocked:
                    continue
                try:
                    value = _message(row)
                    future = await _send(producer, row, value)
                except Exception as exc:
                    park(row, exc)
                    continue
                sent.append((row, value, future))
            results = await asyncio.gather(*(f for _, _, f in sent), return_exceptions=True)
            published: list[tuple[asyncpg.Record, RecordMetadata]] = []
            for (row, value, _), result in zip(sent, results, strict=True):
                if not isinstance(result, BaseException):
                    published.append((row, result))
                    continue
                if permanent_error(result) is None:
                    raise result
                # The broker refused the record's batch: send it alone to tell whether this
                # record is the bad one (the broker limit is below the relay's) or a neighbour.
                if row["key"] in blocked:
                    continue
                try:
                    published.append((row, await (await _send(producer, row, value))))
                except Exception as exc:
                    park(row, exc)
            ids, partitions, offsets = [], [], []
            base: dict[tuple[str, int], int] = {}
            for row, meta in published:
                ids.append(row["id"])
                partitions.append(meta.partition)
                offsets.append(meta.offset)
                tp = (row["topic"], meta.partition)
                self._partitions.add(tp)
                base[tp] = min(meta.offset, base.get(tp, meta.offset))
            # A healthy partition never hands out an offset below an end offset seen before,
            # nor one it already gave a row of ours (known from the outbox across relay restarts).
            lost = [
                tp
                for tp, first in base.items()
                if first < self._ends.get(tp, 0) or (tp in self._last and first <= self._last[tp][0])
            ]
            for row, meta in published:
                tp = (row["topic"], meta.partition)
                if meta.offset >= self._last.get(tp, (-1, 0))[0]:
                    self._last[tp] = (meta.offset, row["id"])
            await conn.execute(mark_published(ids, partitions, offsets))
            for outbox_id, _, reason, error in parked:
                await conn.execute(
                    "INSERT INTO outbox_dead_letters (outbox_id, event_id, topic, key, event_type, payload, "
                    "payload_bytes, reason, error, relay) "
                    "SELECT id, event_id, topic, key, event_type, payload, octet_length(payload::text), "
                    "$2, $3, $4 "
                    "FROM outbox WHERE id = $1",
                    outbox_id,
                    reason,
                    error,
                    self.name,
                )
        self.published += len(ids)
        self.parked += len(parked)
        metrics.OUTBOX_PUBLISHED.labels(self.name).inc(len(ids))
        for outbox_id, key, reason, error in parked:
            metrics.OUTBOX_DEAD_LETTERS.labels(self.name, reason).inc()
            log.error(
                "relay %s parked outbox row %d (key %s) in outbox_dead_letters: %s; "
                "later events of that key wait until an agency-admin releases or discards it",
                self.name,
                outbox_id,
                key,
                error,
            )
        if lost:
            await self.replay_window(f"offsets restarted below the known end on {sorted(lost)}")
        return len(ids) + len(parked)

    async def replay_window(self, reason: str) -> None:
        """Re-publish every row of the retention window (the broker lost it)."""
        assert self._pool is not None
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                'UPDATE outbox SET published_at = NULL, "partition" = NULL, "offset" = NULL '
                "WHERE published_at IS NOT NULL AND created_at > now() - $1::interval RETURNING id",
                self.retention,
            )
            # rows past the window (not yet purged) are not re-published: their offsets are void
            await conn.execute(
                'UPDATE outbox SET "partition" = NULL, "offset" = NULL '
                'WHERE published_at IS NOT NULL AND "offset" IS NOT NULL'
            )
        self._ends.clear()
        self._last.clear()
        self._held.clear()
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
            consumer = AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap, enable_auto_commit=False, **self.kafka_options
            )
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
        # The last record we produced must still be on its partition. An end offset past it
        # says so (Kafka); Tansu reports its last batch's base offset + 1, so an end at or
        # below it is checked by fetching that record (once per offset and end).
        suspects = {
            tp: last
            for tp, last in sorted(self._last.items())
            if tp in now and now[tp] <= last[0] and self._held.get(tp) != (last[0], now[tp])
        }
        if not suspects:
            return
        gone = await self._gone(suspects)
        for tp, (offset, _) in suspects.items():
            if tp not in gone:
                self._held[tp] = (offset, now[tp])
        if gone:
            await self.replay_window(f"the last records produced are gone from {gone}")

    async def _gone(self, last: dict[tuple[str, int], tuple[int, int]]) -> list[tuple[str, int]]:
        """The partitions that do not hold, at their offset, the record of their outbox row."""
        probe = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="none",
            fetch_max_wait_ms=100,
            client_id=f"roomtax-{self.name}-probe",
            **self.kafka_options,
        )
        held: set[tuple[str, int]] = set()
        try:
            await probe.start()
            probe.assign([TopicPartition(*tp) for tp in last])
            for tp, (offset, _) in last.items():
                probe.seek(TopicPartition(*tp), offset)
            deadline = asyncio.get_running_loop().time() + 3
            while len(held) < len(last) and asyncio.get_running_loop().time() < deadline:
                batches = await probe.getmany(timeout_ms=500, max_records=len(last))
                for tp, records in batches.items():
                    key = (tp.topic, tp.partition)
                    offset, row_id = last[key]
                    sequence = json.loads(records[0].value or b"{}").get("sequence")
                    if records[0].offset == offset and sequence == row_id:
                        held.add(key)
                    probe.pause(tp)  # one answer per partition
        except OffsetOutOfRangeError:
            pass  # Kafka: an offset past the end (what it did not hold stays "gone")
        finally:
            await kafka.stop_quietly(probe)
        return sorted(set(last) - held)

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
