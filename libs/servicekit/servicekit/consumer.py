"""At-least-once event consumer with an inbox and a dead-letter table.

For each message: parse the CloudEvent, then in ONE transaction record its id
in ``inbox`` (per consumer) and apply the handler; a redelivered event finds
its id and changes nothing. Offsets are committed after the database commit.
A handler that keeps failing (``max_attempts``) or a message that cannot be
parsed is parked in ``dead_letters`` with the error, and the consumer moves on:
never an endless crash loop.

A broker that lost its log (Tansu in development keeps everything in memory) must
not stall a consumer: Tansu accepts an offset commit from a member of the group as
it was before the restart, so the group's position can end up past the new log's
end, and it never answers OFFSET_OUT_OF_RANGE (``auto_offset_reset`` never applies):
the consumer would wait at an offset that will not exist for a long time, and so
would a restarted worker. So when a poll brings nothing, the consumer looks at its
positions (:meth:`EventConsumer.check_positions`): a position past a partition's
end offset is suspect (Tansu reports its last *batch's* base offset + 1, so it is not
proof), and the consumer then asks for the record just before its position; when
the log does not hold it, the position is past the end and the consumer starts that
partition again from its beginning (the inbox drops what it already applied).

Batches: the records a poll brings, of all its partitions (each partition's in its order,
one partition after the other), are applied ``batch_size`` at a time in ONE transaction, a
lone record too (so the consumer's ``prepare`` serves it as it serves a batch), and the
poll's offsets are committed at once after the last transaction: per-key order is per
partition, so it holds, and a record is committed only after its effects were. Each
chunk: the inbox rows of the whole chunk in one INSERT (the ids it returns are the events
not seen before), then each new event's handler in the chunk's order. A handler defers
work that only the final state needs (an account's recomputation) with
:func:`once_per_batch`: it runs once per key at the end of the chunk, still inside the
transaction. A consumer's ``prepare`` runs before the handlers
with the chunk's new events (to take the chunk's locks, fetch what its handlers look up,
in one statement each). The events the handlers emit are written in one INSERT at the end
(:func:`servicekit.outbox.holding`). If anything in the chunk fails, the transaction
rolls back and the chunk is applied again one event per transaction (each retried,
then parked), exactly as without batches: exactly-once effects and per-key order hold
either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError, OffsetOutOfRangeError
from prometheus_client import Counter
from pydantic import ValidationError, create_model
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import kafka, metrics, outbox, telemetry
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent, EventData

log = logging.getLogger("servicekit.consumer")
CONSUMER_REWINDS = Counter(
    "roomtax_consumer_rewinds_total",
    "Partitions read again from their beginning: the broker lost their log",
    ["consumer"],
)
CONSUMER_STALL_RESTARTS = Counter(
    "roomtax_consumer_stall_restarts_total",
    "Kafka clients replaced because records waited in their partitions and none came",
    ["consumer"],
)

Handler = Callable[[AsyncSession, CloudEvent], Awaitable[None]]
Deferred = Callable[[], Awaitable[object]]
#: runs once per batch, before its handlers, with the batch's new events (in order)
Prepare = Callable[[AsyncSession, Sequence[CloudEvent]], Awaitable[None]]

_PENDING = "servicekit.consumer.pending"

#: How long the broker may hold a fetch that finds nothing (aiokafka's ``fetch_max_wait_ms``).
#: Tansu has no wake-up on produce: it polls its storage at 0, 1/2, 3/4, ... of this wait and
#: answers at the first poll that finds a record, so a record waits up to half of it for the
#: poll after its arrival. Measured on Tansu (bench/README.md, "Event lag, hop by hop"), one hop:
#: 500 ms gives p50 ~130 ms, p99 ~250 ms; 100 ms p50 ~20 ms, p99 ~55 ms. Each idle consumer
#: costs ~8 ms of CPU a second more at 100 than at 500 (client and broker), the whole idle
#: platform 120 ms/s instead of 55 if every consumer used it. So consumers off any latency
#: goal keep aiokafka's 500 ms and those on one (the event-lag goals of issue 12) take
#: :data:`PROMPT_FETCH_MAX_WAIT_MS`; ``ROOMTAX_KAFKA_FETCH_MAX_WAIT_MS`` sets one value for
#: every consumer of a worker.
FETCH_MAX_WAIT_MS = 500
PROMPT_FETCH_MAX_WAIT_MS = 100


async def once_per_batch(session: AsyncSession, key: Hashable, work: Deferred) -> None:
    """Run ``work`` once per ``key`` at the end of the consumer's batch (in its transaction).

    For work that depends only on the state after the batch, such as recomputing an
    account: ten events of one account in a batch recompute it once. The first
    registration of a key wins, so ``work`` must read its state when it runs, not
    capture it. Outside a consumer's transaction (a request, a job) it runs now.
    """
    pending: dict[Hashable, tuple[Deferred, str | None]] | None = session.info.get(_PENDING)
    if pending is None:
        await work()
    elif key not in pending:
        # the work runs later in the trace of the event that asked for it first
        pending[key] = (work, telemetry.current_traceparent())


async def _run_deferred(session: AsyncSession) -> None:
    """The work deferred by the batch's handlers, in the order first registered (work
    that defers more work has it run too)."""
    pending: dict[Hashable, tuple[Deferred, str | None]] = session.info[_PENDING]
    done: set[Hashable] = set()
    while todo := [(k, w) for k, w in pending.items() if k not in done]:
        for key, (work, traceparent) in todo:
            done.add(key)
            with telemetry.attached(traceparent):
                await work()


async def _finish(session: AsyncSession) -> None:
    """The end of a consumer's transaction: the deferred work, then the events it held."""
    await _run_deferred(session)
    await outbox.write_held(session)


@contextlib.contextmanager
def _deferring(session: AsyncSession) -> Iterator[None]:
    """Inside: work deferred with :func:`once_per_batch`, and the events emitted (held by
    :func:`servicekit.outbox.holding`: one INSERT for the transaction), until :func:`_finish`."""
    session.info[_PENDING] = {}
    try:
        with outbox.holding(session):
            yield
    finally:
        session.info.pop(_PENDING, None)


_INBOX_MANY = text(
    "INSERT INTO inbox (consumer, event_id, event_type) "
    "SELECT :c, e, t FROM unnest(CAST(:e AS text[]), CAST(:t AS text[])) AS u(e, t) "
    "ON CONFLICT DO NOTHING RETURNING event_id"
)

C = TypeVar("C", bound=EventData)
#: a contract handler's function: ``(session, model, envelope, runtime)``
ContractFn = Callable[[AsyncSession, C, CloudEvent, Runtime], Awaitable[None]]


class ContractHandler(Generic[C]):
    """A handler of one or more event contracts: called by the consumer, it parses the
    event's data with the contract of its type and passes the model (and the envelope, for
    its id and time, and the consumer's :class:`~servicekit.runtime.Runtime`: the law and the
    day it applies) to the function. Made by :func:`handles`."""

    def __init__(self, contracts: tuple[type[C], ...], fn: ContractFn[C]) -> None:
        self.contracts = {c.event_type: c for c in contracts}
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "handler")
        self.__doc__ = fn.__doc__

    async def __call__(self, session: AsyncSession, event: CloudEvent, runtime: Runtime) -> None:
        contract = self.contracts[event.type]
        data: object = event.data  # the contract already when the consumer parsed it so (parse_contracts)
        await self.fn(
            session, data if isinstance(data, contract) else contract.model_validate(data), event, runtime
        )


#: what a consumer's table holds: a plain handler or a contract handler (which gets the runtime)
AnyHandler = Handler | ContractHandler[Any]


def handles(*contracts: type[C]) -> Callable[[ContractFn[C]], ContractHandler[C]]:
    """Decorator: ``@handles(PaymentReceived)`` over ``async def f(session, payment, event, runtime)``.

    Several contracts sharing a base (the four lodging snapshots) may share a handler typed by
    the base. :class:`EventConsumer` takes a list of these as its ``handlers``.
    """
    if not contracts:
        raise TypeError("handles() needs at least one event contract")

    def wrap(fn: ContractFn[C]) -> ContractHandler[C]:
        return ContractHandler(contracts, fn)

    return wrap


def handler_map(handlers: Iterable[ContractHandler[Any]]) -> dict[str, AnyHandler]:
    """``{event type: handler}`` of contract handlers; a type handled twice is an error."""
    out: dict[str, AnyHandler] = {}
    for handler in handlers:
        for event_type in handler.contracts:
            if event_type in out:
                raise ValueError(f"{event_type} has two handlers")
            out[event_type] = handler
    return out


_ENVELOPES: dict[type[EventData], type[CloudEvent]] = {}


def contract_envelope(contract: type[EventData]) -> type[CloudEvent]:
    """A :class:`CloudEvent` whose ``data`` is ``contract``: the envelope and its data parsed and
    validated in one pass from the bytes, instead of the data parsed into a dict and validated
    again from it (bench/README.md, session 12: 2.1 instead of 5.0 us an event over the plain
    envelope's parse for ``collection.posted``). Made once per contract."""
    envelope = _ENVELOPES.get(contract)
    if envelope is None:
        envelope = _ENVELOPES[contract] = create_model(
            f"{contract.__name__}Envelope", __base__=CloudEvent, data=(contract, ...)
        )
    return envelope


class EventConsumer:
    def __init__(
        self,
        *,
        name: str,
        bootstrap: str,
        topics: list[str],
        sessionmaker: async_sessionmaker[AsyncSession],
        handlers: Mapping[str, AnyHandler] | Iterable[ContractHandler[Any]],
        max_attempts: int = 3,
        retry_delay: float = 0.2,
        session_timeout_ms: int = 3_000,
        check_interval: float = 2.0,
        stall_timeout: float = 30.0,
        kafka_options: Mapping[str, Any] | None = None,
        batch_size: int = 1,
        prepare: Prepare | None = None,
        runtime: Runtime | None = None,
        fetch_max_wait_ms: int = FETCH_MAX_WAIT_MS,
        parse_contracts: bool = False,
    ) -> None:
        self.name = name
        # the law and clock the contract handlers get (the worker sets its process's one)
        self.runtime = runtime or Runtime.from_environment()
        self.bootstrap = bootstrap
        self.topics = topics
        self.sessionmaker = sessionmaker
        self.handlers = dict(handlers) if isinstance(handlers, Mapping) else handler_map(handlers)
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        # Tansu completes a group join after about half the session timeout; 3 s keeps a
        # (re)start under 2 s while heartbeats (every 500 ms) run on their own task.
        self.session_timeout_ms = session_timeout_ms
        self.check_interval = check_interval  # seconds between position checks while idle
        # records waiting that long with none arriving: the client is replaced (see ``run``)
        self.stall_timeout = stall_timeout
        self.kafka_options = dict(kafka_options or {})  # TLS/SASL: servicekit.kafka.client_options
        self.fetch_max_wait_ms = fetch_max_wait_ms  # the broker's longest wait for a record
        self._lag_reported: set[TopicPartition] = set()  # partitions with a roomtax_consumer_lag value
        self.batch_size = batch_size  # events per transaction (1: one event per transaction)
        # a batch's set-up in its transaction before the handlers (locks, what they look up,
        # fetched for the whole batch at once); the handlers must not depend on it
        self.prepare = prepare
        self._verified: dict[TopicPartition, int] = {}  # positions whose previous record exists
        self.applied = 0
        self.duplicates = 0
        self.parked = 0
        self.rewinds = 0
        self.stall_restarts = 0
        self.batches = 0  # transactions that applied more than one event
        # parse_contracts: a consumer of ONE contract handler of one event type parses each record
        # straight into that contract (:func:`contract_envelope`; its handler gets the model without
        # validating the data again). A record the typed parse refuses (another type, data the
        # contract refuses, not JSON) is parsed as a plain envelope, so it meets the handler's own
        # validation, or is ignored or parked, exactly as without it.
        self._envelope: tuple[str, type[CloudEvent]] | None = None
        if parse_contracts:
            handler = next(iter(self.handlers.values()), None)
            if len(self.handlers) != 1 or not isinstance(handler, ContractHandler):
                raise ValueError("parse_contracts needs one contract handler of one event type")
            [event_type] = self.handlers
            self._envelope = (event_type, contract_envelope(handler.contracts[event_type]))

    async def handle_record(self, record: ConsumerRecord[bytes, bytes]) -> str:
        """Apply one record; returns "applied", "duplicate", "ignored" or "parked"."""
        parsed = await self._parse(record)
        if isinstance(parsed, str):
            return parsed
        return await self.apply(parsed[0], parsed[1], record=record)

    async def _call(self, handler: AnyHandler, session: AsyncSession, event: CloudEvent) -> None:
        """A contract handler gets the consumer's runtime; a plain one, session and event."""
        if isinstance(handler, ContractHandler):
            await handler(session, event, self.runtime)
        else:
            await handler(session, event)

    async def _parse(self, record: ConsumerRecord[bytes, bytes]) -> tuple[CloudEvent, AnyHandler] | str:
        """The record's event and its handler, or "parked" (unparseable) or "ignored"."""
        if self._envelope is not None:
            event_type, envelope = self._envelope
            try:
                typed = envelope.model_validate_json(record.value or b"")
            except ValidationError:
                pass  # parsed again below as a plain envelope, to be handled as ever
            else:
                if typed.type == event_type:
                    return typed, self.handlers[event_type]
        try:  # in one pass from the bytes (pydantic-core): 0.44x the CPU (bench/bench_event_parse.py)
            event = CloudEvent.model_validate_json(record.value or b"")
        except Exception as exc:  # noqa: BLE001 - a poison message is parked, not fatal
            await self._park(record, None, f"unparseable event: {exc}")
            return "parked"
        handler = self.handlers.get(event.type)
        if handler is None:
            return "ignored"
        return event, handler

    async def handle_records(self, records: Sequence[ConsumerRecord[bytes, bytes]]) -> None:
        """Apply records in order, ``batch_size`` per transaction (a lone one too): one
        partition's, or a poll's of several partitions, each partition's in its order."""
        for start in range(0, len(records), self.batch_size):
            chunk: list[tuple[CloudEvent, AnyHandler, ConsumerRecord[bytes, bytes]]] = []
            for record in records[start : start + self.batch_size]:
                parsed = await self._parse(record)
                if not isinstance(parsed, str):
                    chunk.append((*parsed, record))
            if chunk and not await self._apply_batch(chunk):
                for event, handler, record in chunk:  # one failed: each on its own, as ever
                    await self.apply(event, handler, record=record)

    async def handle_poll(
        self,
        consumer: AIOKafkaConsumer,
        polled: Mapping[TopicPartition, Sequence[ConsumerRecord[bytes, bytes]]],
    ) -> None:
        """One pass over a poll: its records of every partition applied by
        :meth:`handle_records` (each partition's in order; keys do not span partitions), then
        ONE offset commit for all its partitions, after the last transaction."""
        filled = {tp: records for tp, records in polled.items() if records}
        if not filled:
            return
        await self.handle_records([r for records in filled.values() for r in records])
        await consumer.commit({tp: records[-1].offset + 1 for tp, records in filled.items()})
        for tp, records in filled.items():
            self._report_lag(tp, records[-1].offset + 1, consumer.highwater(tp))

    async def _apply_batch(
        self, chunk: Sequence[tuple[CloudEvent, AnyHandler, ConsumerRecord[bytes, bytes]]]
    ) -> bool:
        """Apply the chunk in one transaction; False (nothing applied) if anything failed."""
        applied: list[str] = []
        duplicates: list[str] = []
        try:
            async with self.sessionmaker() as session, session.begin():
                fresh = set(
                    (
                        await session.execute(
                            _INBOX_MANY,
                            {
                                "c": self.name,
                                "e": [event.id for event, _, _ in chunk],
                                "t": [event.type for event, _, _ in chunk],
                            },
                        )
                    ).scalars()
                )
                with _deferring(session):
                    if self.prepare is not None:
                        await self.prepare(session, [event for event, _, _ in chunk if event.id in fresh])
                    for event, handler, record in chunk:
                        if event.id not in fresh:  # seen before, or twice in the chunk
                            duplicates.append(event.type)
                            continue
                        fresh.discard(event.id)
                        with self._span(event, record):
                            started = time.perf_counter()
                            await self._call(handler, session, event)
                            elapsed = time.perf_counter() - started
                        metrics.HANDLER_LATENCY.labels(self.name, event.type, "applied").observe(elapsed)
                        applied.append(event.type)
                    await _finish(session)
        except Exception as exc:  # noqa: BLE001 - the chunk is applied again event by event
            log.warning("consumer %s: a batch of %d failed (%s); one by one", self.name, len(chunk), exc)
            return False
        if len(applied) > 1:
            self.batches += 1
        self.applied += len(applied)
        self.duplicates += len(duplicates)
        for event_type in applied:
            metrics.EVENTS_CONSUMED.labels(self.name, event_type, "applied").inc()
        for event_type in duplicates:
            metrics.INBOX_DUPLICATES.labels(self.name).inc()
            metrics.EVENTS_CONSUMED.labels(self.name, event_type, "duplicate").inc()
        return True

    def _span(
        self, event: CloudEvent, record: ConsumerRecord[bytes, bytes] | None
    ) -> contextlib.AbstractContextManager[object]:
        """The span of one event, continuing its producer's trace (:mod:`servicekit.telemetry`)."""
        return telemetry.consuming(
            self.name,
            event_id=event.id,
            event_type=event.type,
            traceparent=telemetry.header_traceparent(record.headers if record else None) or event.traceparent,
            topic=record.topic if record else None,
            partition=record.partition if record else None,
            offset=record.offset if record else None,
        )

    async def apply(
        self, event: CloudEvent, handler: AnyHandler, *, record: ConsumerRecord[bytes, bytes] | None = None
    ) -> str:
        """Apply one event in a span continuing its producer's trace (:mod:`servicekit.telemetry`);
        the time it took is ``roomtax_consumer_handler_seconds``."""
        with self._span(event, record):
            started = time.perf_counter()
            outcome = await self._apply(event, handler, record=record)
            elapsed = time.perf_counter() - started
            metrics.HANDLER_LATENCY.labels(self.name, event.type, outcome).observe(elapsed)
            return outcome

    async def _apply(
        self, event: CloudEvent, handler: AnyHandler, *, record: ConsumerRecord[bytes, bytes] | None
    ) -> str:
        last_error = ""
        for attempt in range(1, self.max_attempts + 1):
            try:
                async with self.sessionmaker() as session, session.begin():
                    fresh = await session.execute(
                        text(
                            "INSERT INTO inbox (consumer, event_id, event_type) VALUES (:c, :e, :t) "
                            "ON CONFLICT DO NOTHING RETURNING event_id"
                        ),
                        {"c": self.name, "e": event.id, "t": event.type},
                    )
                    if fresh.first() is None:
                        self.duplicates += 1
                        metrics.INBOX_DUPLICATES.labels(self.name).inc()
                        metrics.EVENTS_CONSUMED.labels(self.name, event.type, "duplicate").inc()
                        return "duplicate"
                    with _deferring(session):
                        await self._call(handler, session, event)
                        await _finish(session)
                self.applied += 1
                metrics.EVENTS_CONSUMED.labels(self.name, event.type, "applied").inc()
                return "applied"
            except Exception as exc:  # noqa: BLE001 - retried, then parked
                last_error = "".join(traceback.format_exception(exc))[-4000:]
                log.warning("consumer %s: %s failed (attempt %d): %s", self.name, event.id, attempt, exc)
                await asyncio.sleep(self.retry_delay * attempt)
        await self._park(record, event, last_error)
        return "parked"

    async def _park(
        self, record: ConsumerRecord[bytes, bytes] | None, event: CloudEvent | None, error: str
    ) -> None:
        self.parked += 1
        metrics.EVENTS_CONSUMED.labels(self.name, event.type if event else "?", "parked").inc()
        if event is not None and isinstance(event.data, EventData) and record is not None:
            event = CloudEvent.model_validate_json(record.value or b"")  # its data as it came, not as parsed
        payload: Any = event.model_dump(mode="json") if event else None
        if payload is None and record is not None:
            payload = {"raw": (record.value or b"").decode("utf-8", "replace")}
        async with self.sessionmaker() as session, session.begin():
            await session.execute(
                text(
                    'INSERT INTO dead_letters (consumer, event_id, event_type, topic, "partition", '
                    '"offset", payload, error) VALUES (:c, :e, :t, :tp, :p, :o, '
                    "CAST(:pl AS jsonb), :err)"
                ),
                {
                    "c": self.name,
                    "e": event.id if event else None,
                    "t": event.type if event else None,
                    "tp": record.topic if record else None,
                    "p": record.partition if record else None,
                    "o": record.offset if record else None,
                    "pl": json.dumps(payload),
                    "err": error,
                },
            )
        log.error("consumer %s parked an event in dead_letters: %s", self.name, error[-300:])

    async def run(self, stop: asyncio.Event) -> None:
        backoff = 0.5
        while not stop.is_set():
            consumer = AIOKafkaConsumer(
                *self.topics,
                bootstrap_servers=self.bootstrap,
                group_id=self.name,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                client_id=f"roomtax-{self.name}",
                metadata_max_age_ms=5_000,
                session_timeout_ms=self.session_timeout_ms,
                # how long a rebalance waits for a member that does not rejoin (one killed mid-
                # rebalance holds its partitions that long): aiokafka's default since it rejoins in
                # the background, pinned here, as the Java client's is max.poll.interval (300 s).
                # Measured on Tansu 0.6.0: a survivor owns the partitions of two members killed
                # mid-rebalance 5 s later.
                rebalance_timeout_ms=self.session_timeout_ms,
                heartbeat_interval_ms=max(100, self.session_timeout_ms // 6),
                fetch_max_wait_ms=self.fetch_max_wait_ms,
                **self.kafka_options,
            )
            loop = asyncio.get_running_loop()
            last_check = loop.time()
            waiting_since: float | None = None  # records waiting and none arriving since then
            try:
                await consumer.start()
                backoff = 0.5
                while not stop.is_set():
                    batches = await consumer.getmany(timeout_ms=500, max_records=500)
                    await self.handle_poll(consumer, batches)
                    if batches:
                        waiting_since = None
                    elif loop.time() - last_check > self.check_interval:
                        last_check = loop.time()
                        await self.check_positions(consumer)
                        if not await self.report_idle_lag(consumer):
                            waiting_since = None
                        elif waiting_since is None:
                            waiting_since = last_check
                        elif last_check - waiting_since > self.stall_timeout:
                            self._stalled(last_check - waiting_since)
                            break  # the client is stopped (finally) and a new one started
            except (KafkaError, OSError) as exc:
                log.warning("consumer %s: broker error %s; reconnecting in %.1fs", self.name, exc, backoff)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                await kafka.stop_quietly(consumer)

    def _report_lag(self, tp: TopicPartition, position: int, end: int | None) -> None:
        if end is not None:
            metrics.CONSUMER_LAG.labels(self.name, tp.topic, str(tp.partition)).set(max(0, end - position))
            self._lag_reported.add(tp)

    async def report_idle_lag(self, consumer: AIOKafkaConsumer) -> bool:
        """The lag of every assigned partition while no record arrives (a stalled fetch shows);
        whether records wait in one of them (its end offset past the position).

        A partition given to another replica by a rebalance is no longer reported here (its
        new owner reports it), so a stale value does not linger in ``roomtax_consumer_lag``.
        """
        assigned = list(consumer.assignment())
        for tp in self._lag_reported - set(assigned):
            with contextlib.suppress(KeyError):
                metrics.CONSUMER_LAG.remove(self.name, tp.topic, str(tp.partition))
            self._lag_reported.discard(tp)
        waiting = False
        if not assigned:
            return waiting
        with contextlib.suppress(KafkaError, AssertionError, TimeoutError):
            ends = await asyncio.wait_for(consumer.end_offsets(assigned), timeout=5)
            for tp in assigned:
                position = await asyncio.wait_for(consumer.position(tp), timeout=5)
                self._report_lag(tp, position, ends.get(tp))
                waiting = waiting or ends.get(tp, position) > position
        return waiting

    def _stalled(self, seconds: float) -> None:
        """Records have waited ``seconds`` in the assigned partitions, and polls brought none.

        Seen once in CI after a broker restart (the consumer's group rejoin never completed
        while the new broker held the relay's records, 180 s): aiokafka's coordination runs on
        its own task and reports no error, so ``run`` would poll the stuck client forever. A
        new client joins the group again and reads from the committed offsets; the inbox drops
        what was applied. A rebalance that runs its course takes the session timeout (3 s).
        """
        self.stall_restarts += 1
        CONSUMER_STALL_RESTARTS.labels(self.name).inc()
        log.warning(
            "consumer %s: records have waited %.0f s and no poll brought them; starting a new client",
            self.name,
            seconds,
        )

    async def check_positions(self, consumer: AIOKafkaConsumer) -> list[TopicPartition]:
        """Start again from the beginning every partition whose position is past its log's end.

        Returns the partitions rewound. Only a position beyond the reported end offset is
        probed, once per position: a fetch of the record just before it.
        """
        positions: dict[TopicPartition, int] = {}
        for tp in consumer.assignment():
            with contextlib.suppress(KafkaError, AssertionError):
                positions[tp] = await asyncio.wait_for(consumer.position(tp), timeout=5)
        if not positions:
            return []
        ends = await asyncio.wait_for(consumer.end_offsets(list(positions)), timeout=5)
        suspects = [
            tp for tp, pos in positions.items() if pos > ends.get(tp, pos) and self._verified.get(tp) != pos
        ]
        if not suspects:
            return []
        beginnings = await asyncio.wait_for(consumer.beginning_offsets(suspects), timeout=5)
        rewound = []
        for tp in suspects:
            pos = positions[tp]
            if await self._holds(tp, pos - 1):
                self._verified[tp] = pos
                continue
            log.warning(
                "consumer %s: %s[%d] position %d is past the log's end (the broker lost its data); "
                "reading it again from offset %d (the inbox drops what was applied)",
                self.name,
                tp.topic,
                tp.partition,
                pos,
                beginnings[tp],
            )
            consumer.seek(tp, beginnings[tp])
            self._verified.pop(tp, None)
            self.rewinds += 1
            CONSUMER_REWINDS.labels(self.name).inc()
            rewound.append(tp)
        return rewound

    async def _holds(self, tp: TopicPartition, offset: int) -> bool:
        """Does the partition's log hold a record at ``offset``?"""
        probe = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="none",
            fetch_max_wait_ms=100,
            client_id=f"roomtax-{self.name}-probe",
            **self.kafka_options,
        )
        try:
            await probe.start()
            probe.assign([tp])
            probe.seek(tp, offset)
            deadline = asyncio.get_running_loop().time() + 3
            while asyncio.get_running_loop().time() < deadline:
                batches = await probe.getmany(tp, timeout_ms=500, max_records=1)
                records = batches.get(tp, [])
                if records:
                    return bool(records[0].offset == offset)
            return False
        except OffsetOutOfRangeError:
            return False
        finally:
            await kafka.stop_quietly(probe)


__all__ = [
    "AnyHandler",
    "ContractHandler",
    "EventConsumer",
    "Handler",
    "TopicPartition",
    "contract_envelope",
    "handler_map",
    "handles",
    "once_per_batch",
]
