"""What tracing costs on the event path: outbox writes and relay → Kafka → consumer.

Run: ``ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/bench_tracing.py [events] [repeats]``.

Each round runs two child processes (tracing is set up once per process), interleaved:

* ``off`` — the baseline: no exporter (the default outside production); the trace context
  is still stored on each outbox row and carried in the Kafka header;
* ``on`` — ``OTEL_TRACES_EXPORTER=otlp`` to a local OTLP/HTTP sink this script runs, with
  the SQLAlchemy, asyncpg and aiokafka instrumentations and a span per consumed event.

A child builds a scratch database at the distribution service's Alembic head, writes
``events`` outbox rows in one transaction each inside a request-like span (as an API
does), then starts a relay and a consumer and times until every event is applied. It
prints events/s of both phases; the parent prints medians and the ratio on/off.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "services" / "distribution" / "migrations"
EVENT = "roomtax.bench.tick.v1"


class Sink(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        Sink.received += len(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


async def child(mode: str, n: int, bootstrap: str) -> dict[str, float]:
    from opentelemetry import trace
    from sqlalchemy.ext.asyncio import AsyncSession

    from servicekit import telemetry
    from servicekit.consumer import EventConsumer
    from servicekit.db import make_engine, make_sessionmaker
    from servicekit.outbox import OutboxRelay, emit
    from servicekit.testing import fresh_database
    from taxcore.events import CloudEvent

    telemetry.configure_tracing("bench", "development")
    assert telemetry.enabled() == (mode == "on")
    url = await fresh_database(f"roomtax_bench_tracing_{mode}", MIGRATIONS)
    engine = make_engine(url, application_name="bench-tracing", pool_size=4)
    sm = make_sessionmaker(engine, service="bench")
    tracer = trace.get_tracer("bench")
    topic = f"bench.tracing.{uuid.uuid4().hex[:8]}"

    start = time.perf_counter()
    for i in range(n):
        with tracer.start_as_current_span("POST /v1/bench", kind=trace.SpanKind.SERVER):
            async with sm() as session, session.begin():
                await emit(session, event_type=EVENT, key=f"k{i % 64}", topic=topic, data={"i": i})
    emitted = time.perf_counter() - start

    async def handler(session: AsyncSession, event: CloudEvent) -> None:
        return None

    stop = asyncio.Event()
    relay = OutboxRelay(dsn=url.replace("+asyncpg", ""), bootstrap=bootstrap, name=f"bench-{mode}")
    consumer = EventConsumer(
        name=f"bench-{mode}-{uuid.uuid4().hex[:6]}",
        bootstrap=bootstrap,
        topics=[topic],
        sessionmaker=sm,
        handlers={EVENT: handler},
    )
    start = time.perf_counter()
    tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
    deadline = time.monotonic() + 600
    while consumer.applied < n and time.monotonic() < deadline:  # noqa: ASYNC110 - a counter, not an event
        await asyncio.sleep(0.05)
    delivered = time.perf_counter() - start
    stop.set()
    await asyncio.gather(*tasks)
    await engine.dispose()
    assert consumer.applied == n, consumer.applied
    return {"emit_per_s": n / emitted, "e2e_per_s": n / delivered}


def main() -> None:
    from servicekit.testing import BrokerProcess, free_port

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    sink = ThreadingHTTPServer(("127.0.0.1", free_port()), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    broker = BrokerProcess()
    broker.start()
    results: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    try:
        for r in range(repeats):
            for mode in ("off", "on"):
                env = dict(os.environ)
                env.pop("OTEL_TRACES_EXPORTER", None)
                if mode == "on":
                    env["OTEL_TRACES_EXPORTER"] = "otlp"
                    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = (
                        f"http://127.0.0.1:{sink.server_port}/v1/traces"
                    )
                out = subprocess.run(
                    [sys.executable, __file__, "--child", mode, str(n), broker.bootstrap],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                ).stdout
                figures = json.loads(out.strip().splitlines()[-1])
                results[mode].append(figures)
                emits, events = figures["emit_per_s"], figures["e2e_per_s"]
                print(f"round {r + 1} {mode:>3}: {emits:8.0f} emits/s  {events:8.0f} events/s")
    finally:
        broker.stop()
        sink.shutdown()
    load = os.getloadavg()[0]
    print(f"\n{n} events, {repeats} interleaved rounds, load {load:.1f}; OTLP bytes {Sink.received}")
    for key, label in (("emit_per_s", "outbox writes"), ("e2e_per_s", "relay → Kafka → consumer")):
        off = statistics.median(x[key] for x in results["off"])
        on = statistics.median(x[key] for x in results["on"])
        print(f"{label:<26} off {off:8.0f}/s  on {on:8.0f}/s  ratio on/off {on / off:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(asyncio.run(child(sys.argv[2], int(sys.argv[3]), sys.argv[4]))))
    else:
        main()
