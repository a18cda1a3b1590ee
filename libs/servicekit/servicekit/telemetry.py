"""OpenTelemetry tracing of every service process, and the trace context of events.

One declaration is one trace across the services: the request's span context is stored
on its outbox row (column ``traceparent``, :func:`current_traceparent` at
:func:`servicekit.outbox.emit`), the relay sends it as the CloudEvents ``traceparent``
extension and as the W3C ``traceparent`` Kafka header (:func:`kafka_headers`), and each
consumer handles the event in a span continuing that trace (:func:`consuming`), so the
events the handler emits carry the same trace to the next service.

Configuration is the standard ``OTEL_*`` environment (read by the SDK itself):
``OTEL_TRACES_EXPORTER`` (``otlp``, ``console`` or ``none``; comma-separated),
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER`` / ``OTEL_TRACES_SAMPLER_ARG``, ``OTEL_BSP_*``, and
``OTEL_SDK_DISABLED=true`` to turn everything off. The exporter defaults to ``otlp`` in
production and to ``none`` elsewhere: in development and tests nothing is traced (no
spans, no cost) unless ``OTEL_TRACES_EXPORTER`` asks for it.

When tracing is on, the FastAPI, asyncpg, httpx and aiokafka instrumentations are
installed (every SQL statement is an asyncpg span, SQLAlchemy's included: the SQLAlchemy
instrumentation would only repeat them, and its releases do not cover SQLAlchemy 2.1),
and every JSON log line written inside a span carries its ``trace_id`` and ``span_id``
(:mod:`servicekit.logs`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = logging.getLogger("servicekit.telemetry")

TRACEPARENT = "traceparent"
#: routes never traced (probes and scrapes would drown the traces of real requests)
EXCLUDED_URLS = "healthz,readyz,metrics"
_W3C = TraceContextTextMapPropagator()
#: how every API process runs uvicorn (the services' ``api`` command and the web app): each
#: request starts from an empty context. Otherwise a request on a kept-alive connection may
#: run in the previous request's context (asyncio copies the context of the task that resumed
#: reading the socket or started a pipelined request, cpython#140947): the tracing middleware
#: then sees that request's span as current and makes the new request an internal span of the
#: old trace, its own ``traceparent`` ignored, and its log lines carry the old trace id. A web
#: page's trace was lost so in 2 of 4 runs of the tracing platform test under load.
SERVER_OPTIONS: dict[str, Any] = {"reset_contextvars": True}
_state: dict[str, Any] = {"enabled": False, "service": None}


def exporters(environment: str, env: dict[str, str] | None = None) -> list[str]:
    """The span exporters asked for: ``OTEL_TRACES_EXPORTER``, else ``otlp`` in production only."""
    env = dict(os.environ) if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    raw = env.get("OTEL_TRACES_EXPORTER")
    if raw is None:
        raw = "otlp" if environment == "production" else "none"
    names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    unknown = sorted(set(names) - {"otlp", "console", "none"})
    if unknown:
        raise ValueError(f"OTEL_TRACES_EXPORTER: unsupported exporter(s) {unknown} (otlp, console, none)")
    return [n for n in names if n != "none"]


def enabled() -> bool:
    """Whether this process traces (:func:`configure_tracing` installed a provider)."""
    return bool(_state["enabled"])


def configure_tracing(service: str, environment: str) -> bool:
    """Install the tracer provider, its exporters and the instrumentations, once per process.

    Returns whether tracing is on. Safe to call again (the API factory and the command
    line both call it): the second call changes nothing.
    """
    if _state["enabled"] or _state["service"] is not None:
        return bool(_state["enabled"])
    _state["service"] = service
    names = exporters(environment)
    if not names:
        return False
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    attributes = {"deployment.environment": environment}
    if "OTEL_SERVICE_NAME" not in os.environ:
        attributes[SERVICE_NAME] = f"roomtax-{service}"
    provider = TracerProvider(resource=Resource.create(attributes))  # sampler: OTEL_TRACES_SAMPLER
    for name in names:
        exporter: SpanExporter
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()  # endpoint, headers, timeout: OTEL_EXPORTER_OTLP_*
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))  # OTEL_BSP_* tune it
    trace.set_tracer_provider(provider)
    _instrument_libraries()
    _state["enabled"] = True
    log.info("tracing on: exporters %s", ",".join(names))
    return True


def _instrument_libraries() -> None:
    from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    AsyncPGInstrumentor().instrument()  # type: ignore[no-untyped-call] # every statement, through SQLAlchemy or not
    HTTPXClientInstrumentor().instrument()
    AIOKafkaInstrumentor().instrument()  # producer spans inject the traceparent header


def instrument_app(app: Any) -> None:
    """Trace the FastAPI app's requests (not its probes and metrics), when tracing is on."""
    if not enabled():
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, excluded_urls=EXCLUDED_URLS)


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span, or ``None`` outside any (sampled or not)."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return carrier.get(TRACEPARENT)


def current_ids() -> tuple[str, str] | None:
    """``(trace_id, span_id)`` of the current span in hex, for log lines."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def context_of(traceparent: str | None) -> otel_context.Context | None:
    """The context a stored ``traceparent`` names (``None`` when absent or malformed)."""
    if not traceparent:
        return None
    ctx = _W3C.extract({TRACEPARENT: traceparent})
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


@contextlib.contextmanager
def attached(traceparent: str | None) -> Iterator[None]:
    """Make the stored ``traceparent`` the current context (the relay publishing a row)."""
    ctx = context_of(traceparent)
    if ctx is None:
        yield
        return
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


def kafka_headers(traceparent: str | None) -> list[tuple[str, bytes]]:
    """The Kafka headers of an outbox row published under :func:`attached`.

    When tracing is on, the aiokafka instrumentation's producer span (a child of the
    stored context) writes the ``traceparent`` header itself; otherwise the stored one is
    sent as it is, so a downstream service that traces still continues the trace.
    """
    if enabled() or not traceparent:
        return []
    return [(TRACEPARENT, traceparent.encode())]


def header_traceparent(headers: Sequence[tuple[str, bytes | None]] | None) -> str | None:
    for key, value in headers or ():
        if key == TRACEPARENT and value:
            return value.decode("latin-1")
    return None


@contextlib.contextmanager
def consuming(
    consumer: str,
    *,
    event_id: str,
    event_type: str,
    traceparent: str | None,
    topic: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
) -> Iterator[None]:
    """A consumer span for one event, continuing the trace the producer started.

    ``traceparent`` is the record's Kafka header, else the event's CloudEvents extension.
    Without tracing the stored context is still made current, so what the handler emits
    keeps the producer's trace.
    """
    parent = context_of(traceparent)
    if not enabled():
        with attached(traceparent):
            yield
        return
    tracer = trace.get_tracer("servicekit.consumer")
    attributes: dict[str, str | int] = {
        "messaging.system": "kafka",
        "messaging.operation.type": "process",
        "messaging.consumer.group.name": consumer,
        "messaging.message.id": event_id,
        "cloudevents.event_id": event_id,
        "cloudevents.event_type": event_type,
    }
    if topic is not None:
        attributes["messaging.destination.name"] = topic
    if partition is not None:
        attributes["messaging.destination.partition.id"] = str(partition)
    if offset is not None:
        attributes["messaging.kafka.offset"] = offset
    with tracer.start_as_current_span(
        f"process {event_type}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    ) as span:
        try:
            yield
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


__all__ = [
    "SERVER_OPTIONS",
    "TRACEPARENT",
    "attached",
    "configure_tracing",
    "consuming",
    "current_ids",
    "current_traceparent",
    "enabled",
    "exporters",
    "header_traceparent",
    "instrument_app",
    "kafka_headers",
]
