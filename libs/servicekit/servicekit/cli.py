"""One command line for every service: ``python -m <service> <command>``.

Commands: ``migrate`` (alembic upgrade head, creating the database), ``api``
(uvicorn), ``relay`` (outbox -> Kafka), ``consumer`` (Kafka -> handlers),
``worker`` (relay and consumers in one process).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.logs import configure_logging
from servicekit.migrations import upgrade
from servicekit.outbox import OutboxRelay
from servicekit.settings import ServiceSettings

log = logging.getLogger("servicekit.cli")

ConsumerFactory = Callable[[ServiceSettings, async_sessionmaker[AsyncSession]], list[EventConsumer]]


@dataclass
class ServiceSpec:
    name: str
    settings: Callable[[], ServiceSettings]
    app: Callable[[ServiceSettings], FastAPI]
    migrations: Path
    default_port: int
    consumers: ConsumerFactory = field(default=lambda s, m: [])
    background: list[Callable[[ServiceSettings, async_sessionmaker[AsyncSession], asyncio.Event], object]] = (
        field(default_factory=list)
    )


def relay_for(settings: ServiceSettings) -> OutboxRelay:
    return OutboxRelay(
        dsn=settings.asyncpg_dsn,
        bootstrap=settings.kafka_bootstrap,
        name=f"{settings.service_name}-relay",
        retention=timedelta(days=settings.outbox_retention_days),
        max_message_bytes=settings.outbox_max_message_bytes,
    )


HEARTBEAT_FILE = os.environ.get("ROOMTAX_WORKER_HEARTBEAT", "/tmp/roomtax-worker.heartbeat")  # noqa: S108
HEARTBEAT_SECONDS = 10.0


async def heartbeat(
    tasks: list[asyncio.Task[object]], stop: asyncio.Event, path: str = HEARTBEAT_FILE
) -> None:
    """Touch ``path`` every few seconds while every relay and consumer task is alive.

    A worker whose loop is stuck or whose task died stops touching it, and the
    liveness probe (file older than a minute) has the orchestrator restart it.
    """
    target = Path(path)
    while not stop.is_set():
        dead = [t for t in tasks if t.done()]
        if dead:
            log.error("worker task ended unexpectedly: %s; heartbeat stops", dead[0].get_name())
            return
        with contextlib.suppress(OSError):
            await asyncio.to_thread(target.touch)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=HEARTBEAT_SECONDS)


async def run_workers(
    spec: ServiceSpec,
    settings: ServiceSettings,
    *,
    relay: bool,
    consumers: bool,
    stop: asyncio.Event | None = None,
) -> None:
    stop = stop or asyncio.Event()
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
        for consumer in spec.consumers(settings, sessionmaker):
            tasks.append(asyncio.create_task(consumer.run(stop)))
        for job in spec.background:
            tasks.append(asyncio.create_task(job(settings, sessionmaker, stop)))  # type: ignore[arg-type]
    beat = asyncio.create_task(heartbeat(list(tasks), stop))
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
    args = parser.parse_args(argv)
    settings = spec.settings()
    configure_logging(spec.name, settings.log_level)
    if args.command == "migrate":
        upgrade(spec.migrations, settings.database_url)
    elif args.command == "api":
        import uvicorn

        uvicorn.run(spec.app(settings), host=args.host, port=args.port, log_config=None, access_log=False)
    else:
        asyncio.run(
            run_workers(
                spec,
                settings,
                relay=args.command in ("relay", "worker"),
                consumers=args.command in ("consumer", "worker"),
            )
        )
