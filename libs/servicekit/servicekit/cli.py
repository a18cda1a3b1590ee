"""One command line for every service: ``python -m <service> <command>``.

Commands: ``migrate`` (alembic upgrade head, creating the database), ``api``
(uvicorn), ``relay`` (outbox -> Kafka), ``consumer`` (Kafka -> handlers),
``worker`` (relay and consumers in one process), ``health`` (the running worker's
last heartbeat: its broker health).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import kafka, metrics, monitoring, telemetry
from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.logs import configure_logging
from servicekit.migrations import upgrade
from servicekit.outbox import OutboxRelay
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings

log = logging.getLogger("servicekit.cli")

#: the service's consumers, built with the process's runtime (the law and clock their handlers get)
ConsumerFactory = Callable[[ServiceSettings, async_sessionmaker[AsyncSession], Runtime], list[EventConsumer]]


@dataclass
class ServiceSpec:
    name: str
    settings: Callable[[], ServiceSettings]
    app: Callable[[ServiceSettings], FastAPI]
    migrations: Path
    default_port: int
    consumers: ConsumerFactory = field(default=lambda s, m, r: [])
    #: worker tasks, called with the settings, the sessionmaker, the stop event and the runtime
    background: list[
        Callable[[ServiceSettings, async_sessionmaker[AsyncSession], asyncio.Event, Runtime], object]
    ] = field(default_factory=list)


def relay_for(settings: ServiceSettings) -> OutboxRelay:
    return OutboxRelay(
        dsn=settings.asyncpg_dsn,
        bootstrap=settings.kafka_bootstrap,
        name=f"{settings.service_name}-relay",
        retention=timedelta(days=settings.outbox_retention_days),
        max_message_bytes=settings.outbox_max_message_bytes,
        kafka_options=kafka.client_options(settings),
    )


HEARTBEAT_FILE = os.environ.get("ROOMTAX_WORKER_HEARTBEAT", "/tmp/roomtax-worker.heartbeat")  # noqa: S108
HEARTBEAT_SECONDS = 10.0


async def heartbeat(
    tasks: list[asyncio.Task[object]],
    stop: asyncio.Event,
    path: str = HEARTBEAT_FILE,
    *,
    bootstrap: str | None = None,
    kafka_options: dict[str, Any] | None = None,
    interval: float = HEARTBEAT_SECONDS,
    state: dict[str, object] | None = None,
) -> None:
    """Write the worker's health to ``path`` every few seconds while every task is alive.

    The file holds ``{"at": ..., "tasks": n, "broker": "ok" | "unavailable"}``: the
    workers are where the broker's health is reported (the APIs' readiness depends on
    the database only, their writes go to the outbox). The broker state is also the
    gauge ``roomtax_worker_broker_up``. A broker outage does not stop the heartbeat (the
    relay and consumers reconnect on their own); a worker whose loop is stuck or whose
    task died stops writing it, and the liveness probe (file older than a minute) has
    the orchestrator restart it. ``state`` (when given) is updated with the same health,
    for the worker's ``/healthz`` on its operations port (:func:`worker_status`).
    """
    from servicekit.app import broker_reachable

    target = Path(path)
    while not stop.is_set():
        dead = [t for t in tasks if t.done()]
        if dead:
            why = "cancelled" if dead[0].cancelled() else repr(dead[0].exception())
            log.error("worker task ended unexpectedly: %s (%s); heartbeat stops", dead[0].get_name(), why)
            return
        health: dict[str, object] = {"at": time.time(), "tasks": len(tasks)}
        if bootstrap is not None:
            up = await broker_reachable(bootstrap, options=kafka_options)
            metrics.WORKER_BROKER_UP.set(1 if up else 0)
            health["broker"] = "ok" if up else "unavailable"
            if not up:
                log.warning("worker health: the broker at %s is unavailable", bootstrap)
        if state is not None:
            state.update(health)
        with contextlib.suppress(OSError):
            await asyncio.to_thread(target.write_text, json.dumps(health))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)


def worker_status(tasks: Sequence[asyncio.Task[Any]], state: dict[str, object]) -> dict[str, object]:
    """The worker's ``/healthz``: ok while every task runs and the last heartbeat is recent."""
    dead = sorted(t.get_name() for t in tasks if t.done())
    at = state.get("at")
    fresh = isinstance(at, float) and time.time() - at < 6 * HEARTBEAT_SECONDS
    return {**state, "ok": not dead and fresh, "dead_tasks": dead, "fresh": fresh}


def worker_health(path: str = HEARTBEAT_FILE, *, max_age: float = 60.0) -> dict[str, object]:
    """The last health a worker wrote, with ``fresh`` (written within ``max_age`` seconds)."""
    target = Path(path)
    try:
        health: dict[str, object] = json.loads(target.read_text() or "{}")
        health["fresh"] = time.time() - target.stat().st_mtime < max_age
    except (OSError, ValueError):
        return {"fresh": False}
    return health


#: a worker's collector thresholds (:func:`settle_heap`): a consumer's batch holds its facts while
#: it recomputes (a batch of 100 accounts of 150 periods: 15,000 liability records, 15,000 stored
#: summaries, their Decimals and 15,000 period bases), so a young collection every 700
#: allocations (the default) walked them again and again as they were promoted: ~15% of the
#: batch's recomputation CPU (bench/profile_wide.py: the collector 240-300 us of 1,650-1,840 per
#: account; 167 at these thresholds, the API's). What the batch leaves dies by reference count.
WORKER_GC_THRESHOLDS = (20_000, 20, 50)


def settle_heap() -> None:
    """Once started: what is alive now (modules, the law's parameters, models, compiled
    statements) lives as long as the process, so it goes to the collector's permanent
    generation (``gc.freeze``) and a full collection no longer walks it. A worker holds
    ~210,000 such objects; walking them made the collector a fifth to a third of a
    consumer's CPU (bench/bench_consumer_batches.py). Cycles among them are never freed,
    which is what they never were. Then the collector runs less often
    (:data:`WORKER_GC_THRESHOLDS`)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*WORKER_GC_THRESHOLDS)


#: the API process's collector thresholds: a request's objects die by reference count, so a
#: young collection every 700 allocations (the default) mostly walks the objects of the
#: requests in flight; at 20,000 one runs every few hundred requests instead of ~3 per 100
#: (in-process, 3,000 POSTs 8 at a time: 101 young collections -> 0, pauses of up to 12 ms
#: at load 11 gone; issue 12)
API_GC_THRESHOLDS = (20_000, 20, 50)


def configure_consumer(consumer: EventConsumer, settings: ServiceSettings) -> None:
    """What the worker's settings say of every consumer: how it connects (TLS/SASL,
    :mod:`servicekit.kafka`) and, when ``kafka_fetch_max_wait_ms`` is set, the broker's
    longest wait for a fetch (else the consumer's own, :data:`servicekit.consumer.FETCH_MAX_WAIT_MS`)."""
    consumer.kafka_options = kafka.client_options(settings)
    if settings.kafka_fetch_max_wait_ms is not None:
        consumer.fetch_max_wait_ms = settings.kafka_fetch_max_wait_ms


async def run_workers(
    spec: ServiceSpec,
    settings: ServiceSettings,
    *,
    relay: bool,
    consumers: bool,
    stop: asyncio.Event | None = None,
    runtime: Runtime | None = None,
) -> None:
    stop = stop or asyncio.Event()
    runtime = runtime or Runtime.from_environment()  # the process's law and clock, read once
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    engine = make_engine(settings.database_url, application_name=f"{spec.name}-worker", pool_size=5)
    sessionmaker = make_sessionmaker(engine, service=spec.name)
    tasks = []
    if relay:
        tasks.append(asyncio.create_task(relay_for(settings).run(stop)))
    if consumers:
        for consumer in spec.consumers(settings, sessionmaker, runtime):
            configure_consumer(consumer, settings)
            tasks.append(asyncio.create_task(consumer.run(stop)))
        for job in spec.background:
            tasks.append(asyncio.create_task(job(settings, sessionmaker, stop, runtime)))  # type: ignore[arg-type]
    settle_heap()
    if settings.metrics_port is not None:  # /metrics and /healthz (servicekit.monitoring)
        tasks.append(asyncio.create_task(monitoring.watch_database(engine, spec.name, stop), name="monitor"))
    state: dict[str, object] = {}
    beat = asyncio.create_task(
        heartbeat(
            list(tasks),
            stop,
            bootstrap=settings.kafka_bootstrap,
            kafka_options=kafka.client_options(settings),
            state=state,
        )
    )
    if settings.metrics_port is not None:
        watched = [*tasks, beat]
        tasks.append(
            asyncio.create_task(
                monitoring.serve_operations(
                    spec.name,
                    settings.metrics_port,
                    stop,
                    host=settings.metrics_host,
                    health=lambda: worker_status(watched, state),
                ),
                name="operations-port",
            )
        )
    try:
        await stop.wait()
        await beat
    finally:
        for t in tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(t, timeout=10)
        await engine.dispose()


def main(spec: ServiceSpec, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {spec.name}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="alembic upgrade head (creates the database if missing)")
    api = sub.add_parser("api", help="serve the HTTP API")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=spec.default_port)
    sub.add_parser("relay", help="publish the outbox to Kafka")
    sub.add_parser("consumer", help="consume events")
    sub.add_parser("worker", help="relay and consumers in one process")
    sub.add_parser("health", help="the worker's last heartbeat; exit 1 unless fresh and broker ok")
    args = parser.parse_args(argv)
    settings = spec.settings()
    configure_logging(spec.name, settings.log_level)
    telemetry.configure_tracing(spec.name, settings.environment)
    if args.command == "migrate":
        upgrade(spec.migrations, settings.database_url)
    elif args.command == "health":
        health = worker_health()
        print(json.dumps(health))
        raise SystemExit(0 if health["fresh"] and health.get("broker") == "ok" else 1)
    elif args.command == "api":
        import uvicorn

        app = spec.app(settings)
        # what start-up built (modules, pydantic schemas, routes) lives as long as the process:
        # out of the collector's sight, so a full collection scans only what requests allocate
        # (a 2,000-row schedule chunk: ~20% less CPU in-process, measured for issue 12)
        gc.collect()
        gc.freeze()
        gc.set_threshold(*API_GC_THRESHOLDS)
        uvicorn.run(
            app, host=args.host, port=args.port, log_config=None, access_log=False, **telemetry.SERVER_OPTIONS
        )
    else:
        asyncio.run(
            run_workers(
                spec,
                settings,
                relay=args.command in ("relay", "worker"),
                consumers=args.command in ("consumer", "worker"),
            )
        )
