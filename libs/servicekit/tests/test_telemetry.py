"""Trace context through the outbox, and the operations port's gauges (servicekit.telemetry,
servicekit.monitoring), against the real database and broker.

This process does not trace (the exporter defaults to ``none`` outside production), which is
the case a service with tracing off is in: it must still carry the trace context it received,
so a service downstream that traces continues the trace (tests/test_platform_tracing.py runs
the four services with tracing on).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import sqlalchemy as sa
from aiokafka import AIOKafkaConsumer, ConsumerRecord
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from prometheus_client import REGISTRY
from servicekit_fixtures import EVENT, TOPIC, make_chassis_db
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from servicekit import monitoring, telemetry
from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import OutboxRelay, emit
from servicekit.schedule import create_job_runs_table
from servicekit.testing import BrokerProcess
from taxcore.events import CloudEvent

SM = async_sessionmaker[AsyncSession]
FOLLOW_UP = "roomtax.chassis.widget.noted.v1"


def traceparent() -> tuple[str, str]:
    trace_id = secrets.token_hex(16)
    return trace_id, f"00-{trace_id}-{secrets.token_hex(8)}-01"


@pytest.fixture
async def sm(chassis_db: str) -> AsyncIterator[SM]:
    engine = make_engine(chassis_db, application_name="telemetry-test", pool_size=4)
    yield make_sessionmaker(engine, service="chassis")
    await engine.dispose()


async def stored(sm: SM, event_id: str) -> str | None:
    async with sm() as session:
        value = await session.scalar(
            text("SELECT traceparent FROM outbox WHERE event_id = :e"), {"e": event_id}
        )
        return value  # type: ignore[no-any-return]


class TestExporters:
    def test_off_outside_production_unless_asked(self) -> None:
        assert telemetry.exporters("development", {}) == []
        assert telemetry.exporters("test", {}) == []
        assert telemetry.exporters("production", {}) == ["otlp"]
        assert telemetry.exporters("development", {"OTEL_TRACES_EXPORTER": "otlp,console"}) == [
            "otlp",
            "console",
        ]
        assert telemetry.exporters("production", {"OTEL_TRACES_EXPORTER": "none"}) == []
        assert telemetry.exporters("production", {"OTEL_SDK_DISABLED": "true"}) == []

    def test_an_unknown_exporter_is_refused(self) -> None:
        with pytest.raises(ValueError, match=r"unsupported exporter\(s\) \['jaeger'\]"):
            telemetry.exporters("production", {"OTEL_TRACES_EXPORTER": "jaeger"})

    def test_this_process_does_not_trace(self) -> None:
        assert telemetry.enabled() is False
        assert telemetry.current_traceparent() is None
        assert telemetry.current_ids() is None


class TestOutboxRow:
    async def test_emit_stores_the_current_trace_context(self, sm: SM) -> None:
        trace_id, parent = traceparent()
        async with sm() as session, session.begin():
            with telemetry.attached(parent):
                assert telemetry.current_ids() == (trace_id, parent.split("-")[2])
                inside = await emit(session, event_type=EVENT, key="k", topic=TOPIC, data={"name": "in"})
            outside = await emit(session, event_type=EVENT, key="k", topic=TOPIC, data={"name": "out"})
        assert await stored(sm, inside) == parent
        assert await stored(sm, outside) is None

    def test_a_malformed_traceparent_is_no_context(self) -> None:
        with telemetry.attached("00-not-a-trace-01"):
            assert telemetry.current_traceparent() is None
        assert telemetry.header_traceparent([("other", b"x"), ("traceparent", b"00-a-b-01")]) == "00-a-b-01"
        assert telemetry.header_traceparent(None) is None


class TestAcrossTheBroker:
    async def test_header_extension_and_the_handlers_events_carry_the_trace(
        self, sm: SM, chassis_db: str, broker: BrokerProcess
    ) -> None:
        trace_id, parent = traceparent()
        name = f"traced-{uuid.uuid4().hex[:8]}"
        seen: list[str | None] = []

        async def handler(session: AsyncSession, event: CloudEvent) -> None:
            if event.data.get("name") != name:
                return  # another test's event on the shared topic
            seen.append(telemetry.current_traceparent())
            await emit(session, event_type=FOLLOW_UP, key=name, topic=TOPIC, data={"of": event.id})

        stop = asyncio.Event()
        relay = OutboxRelay(
            dsn=chassis_db.replace("+asyncpg", ""), bootstrap=broker.bootstrap, name="tp-relay"
        )
        consumer = EventConsumer(
            name=f"tp-{uuid.uuid4().hex[:6]}",
            bootstrap=broker.bootstrap,
            topics=[TOPIC],
            sessionmaker=sm,
            handlers={EVENT: handler},
        )
        tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
        reader = AIOKafkaConsumer(TOPIC, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
        await reader.start()
        try:
            async with sm() as session, session.begin():
                with telemetry.attached(parent):
                    first = await emit(session, event_type=EVENT, key=name, topic=TOPIC, data={"name": name})
            records: dict[str, tuple[dict[str, object], list[tuple[str, bytes]]]] = {}
            deadline = asyncio.get_running_loop().time() + 30
            while len(records) < 2 and asyncio.get_running_loop().time() < deadline:
                for batch in (await reader.getmany(timeout_ms=500)).values():
                    for r in batch:
                        if r.key == name.encode():
                            envelope = json.loads(r.value or b"{}")
                            records[str(envelope["type"])] = (envelope, list(r.headers))
            assert set(records) == {EVENT, FOLLOW_UP}
        finally:
            await reader.stop()
            stop.set()
            await asyncio.gather(*tasks)
        envelope, headers = records[EVENT]
        assert envelope["id"] == first
        assert envelope["traceparent"] == parent  # the CloudEvents extension
        assert headers == [("traceparent", parent.encode())]  # the W3C Kafka header
        assert seen == [parent]  # the handler ran in the producer's context
        follow_up, follow_headers = records[FOLLOW_UP]
        assert follow_up["traceparent"] == parent  # the next hop keeps the same trace
        assert follow_headers == [("traceparent", parent.encode())]
        assert str(follow_up["traceparent"]).split("-")[1] == trace_id

    async def test_the_kafka_header_wins_over_the_extension(self, sm: SM) -> None:
        _, header = traceparent()
        _, extension = traceparent()
        seen: list[str | None] = []

        async def handler(session: AsyncSession, event: CloudEvent) -> None:
            seen.append(telemetry.current_traceparent())

        consumer = EventConsumer(
            name=f"tp-{uuid.uuid4().hex[:6]}",
            bootstrap="unused:9092",
            topics=[TOPIC],
            sessionmaker=sm,
            handlers={},
        )

        def event() -> CloudEvent:
            return CloudEvent(
                id=str(uuid.uuid4()), source="/t", type=EVENT, time=datetime.now(UTC), traceparent=extension
            )

        def record(headers: list[tuple[str, bytes]]) -> ConsumerRecord[bytes, bytes]:
            return ConsumerRecord(TOPIC, 0, 7, 0, 0, b"k", b"{}", None, 1, 2, headers)

        assert (
            await consumer.apply(event(), handler, record=record([("traceparent", header.encode())]))
            == "applied"
        )
        assert await consumer.apply(event(), handler, record=record([])) == "applied"
        assert await consumer.apply(event(), handler) == "applied"
        assert seen == [header, extension, extension]


@pytest.fixture(scope="module")
async def monitored_db() -> AsyncIterator[AsyncEngine]:
    url = await make_chassis_db("roomtax_test_monitoring")
    engine = make_engine(url, application_name="monitoring-test", pool_size=2)

    def add_job_runs(connection: sa.Connection) -> None:
        with Operations.context(MigrationContext.configure(connection)):
            create_job_runs_table()

    async with engine.begin() as conn:
        await conn.run_sync(add_job_runs)
    yield engine
    await engine.dispose()


def gauge(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


class TestDatabaseGauges:
    async def test_outbox_dead_letters_and_jobs_are_read_from_the_tables(
        self, monitored_db: AsyncEngine
    ) -> None:
        service = f"mon-{uuid.uuid4().hex[:6]}"
        async with monitored_db.begin() as conn:
            for i, age in enumerate((timedelta(minutes=10), timedelta(minutes=1))):
                await conn.execute(
                    text(
                        "INSERT INTO outbox (event_id, topic, key, event_type, payload, created_at) "
                        "VALUES (:e, 't', 'k', 'x', '{}'::jsonb, now() - CAST(:a AS interval))"
                    ),
                    {"e": f"{service}-{i}", "a": age},
                )
            await conn.execute(
                text(
                    "INSERT INTO outbox (event_id, topic, key, event_type, payload, published_at) "
                    "VALUES (:e, 't', 'k', 'x', '{}'::jsonb, now())"
                ),
                {"e": f"{service}-sent"},
            )
            await conn.execute(
                text(
                    "INSERT INTO outbox_dead_letters (outbox_id, event_id, topic, key, event_type, "
                    "payload, payload_bytes, reason, error, relay) SELECT id, event_id, topic, key, "
                    "event_type, payload, 2, 'too-large', 'e', 'r' FROM outbox WHERE event_id = :e"
                ),
                {"e": f"{service}-0"},
            )
            for _ in range(3):
                await conn.execute(text("INSERT INTO dead_letters (consumer, error) VALUES ('c', 'boom')"))
            await conn.execute(
                text(
                    "INSERT INTO job_runs (job, scheduled_for, runner, started_at, finished_at) VALUES "
                    "('estimates', '2026-11-30', 'w1', '2026-11-30 06:00Z', '2026-11-30 06:05Z'), "
                    "('estimates', '2026-12-01', 'w1', '2026-12-01 06:00Z', '2026-12-01 06:07Z'), "
                    "('summaries', '2026-12-01', 'w2', '2026-12-01 06:00Z', NULL)"
                )
            )
        await monitoring.refresh_database_gauges(monitored_db, service)
        assert gauge("roomtax_outbox_backlog", service=service) == 2.0
        oldest = gauge("roomtax_outbox_oldest_unpublished_age_seconds", service=service)
        assert oldest is not None
        assert 600 <= oldest < 660
        assert gauge("roomtax_outbox_dead_letters_open", service=service) == 1.0
        assert gauge("roomtax_consumer_dead_letters", service=service) == 3.0
        # 2026-12-01 06:07 UTC; the unfinished run of another job reports nothing
        assert (
            gauge("roomtax_job_last_success_timestamp_seconds", service=service, job="estimates")
            == 1796105220.0
        )
        assert gauge("roomtax_job_last_success_timestamp_seconds", service=service, job="summaries") is None

        async with monitored_db.begin() as conn:  # everything published, the dead letter released
            await conn.execute(text("UPDATE outbox SET published_at = now()"))
            await conn.execute(
                text(
                    "UPDATE outbox_dead_letters SET resolution = 'released', resolved_at = now(), "
                    "resolved_by = 'admin'"
                )
            )
        await monitoring.refresh_database_gauges(monitored_db, service)
        assert gauge("roomtax_outbox_backlog", service=service) == 0.0
        assert gauge("roomtax_outbox_oldest_unpublished_age_seconds", service=service) == 0.0
        assert gauge("roomtax_outbox_dead_letters_open", service=service) == 0.0


class TestOperationsApp:
    async def test_metrics_and_health(self) -> None:
        state = {"ok": True, "broker": "ok"}
        app = monitoring.operations_app("svc", health=lambda: dict(state))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ops") as client:
            metrics = await client.get("/metrics")
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain; version=")
            assert "roomtax_worker_broker_up" in metrics.text
            healthy = await client.get("/healthz")
            assert (healthy.status_code, healthy.json()) == (
                200,
                {"service": "svc", "ok": True, "broker": "ok", "status": "ok"},
            )
            state.update(ok=False, broker="unavailable")
            sick = await client.get("/healthz")
            assert (sick.status_code, sick.json()["status"], sick.json()["broker"]) == (
                503,
                "unhealthy",
                "unavailable",
            )
            assert (await client.get("/anything")).status_code == 404


class TestFastAPIsOwnTelemetry:
    async def test_records_nothing_even_with_a_global_meter_provider(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A service's requests are counted by servicekit (Prometheus) and traced by the
        instrumentation of :func:`telemetry.instrument_app` when tracing is on: FastAPI's
        native OpenTelemetry (0.165) is off, so it neither asks the global providers on every
        request nor records its own ``http.server.request.duration`` once one is configured."""
        from opentelemetry import metrics as otel_metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader

        from servicekit.app import create_app
        from servicekit.settings import ServiceSettings

        reader = InMemoryMetricReader()
        provider = MeterProvider(metric_readers=[reader])
        monkeypatch.setattr(otel_metrics, "get_meter_provider", lambda: provider)
        settings = ServiceSettings(
            service_name="quiet", environment="test", database_url="postgresql+asyncpg://unused/none"
        )
        app = create_app(settings, title="Quiet", description="no native telemetry", routers=[])
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://quiet") as client:
            assert (await client.get("/healthz")).status_code == 200
        data = reader.get_metrics_data()
        names = {
            m.name
            for rm in (data.resource_metrics if data is not None else [])
            for sm in rm.scope_metrics
            for m in sm.metrics
        }
        provider.shutdown()
        assert names == set()
