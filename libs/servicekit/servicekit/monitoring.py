"""The operations port of a process: ``/metrics`` and ``/healthz`` apart from the public API.

A worker serves no API, so its metrics and health need a port of their own
(``ROOMTAX_METRICS_PORT``); an API serves its ``/metrics`` there too, off the public port,
so the metrics are reachable only where the NetworkPolicy lets the monitoring namespace in.

The worker also reads its database every :data:`REFRESH_SECONDS` into gauges a Prometheus
rule can alert on (:func:`refresh_database_gauges`): the outbox backlog and the age of its
oldest unpublished row, open outbox dead letters, the consumers' dead letters, and when each
daily job last succeeded. They come from the tables, not from the process's memory, so every
replica reports the same values and a restarted worker reports them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from servicekit import metrics

log = logging.getLogger("servicekit.monitoring")
REFRESH_SECONDS = 15.0

Health = Callable[[], dict[str, object]]


def operations_app(service: str, health: Health | None = None) -> Starlette:
    """``/metrics`` (Prometheus text) and ``/healthz`` (``health()``: 200 when ``ok`` is true)."""

    async def prometheus(_: Request) -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    async def healthz(_: Request) -> JSONResponse:
        body: dict[str, object] = {"service": service, "ok": True}
        if health is not None:
            body.update(health())
        body["status"] = "ok" if body["ok"] else "unhealthy"
        return JSONResponse(body, status_code=200 if body["ok"] else 503)

    return Starlette(routes=[Route("/metrics", prometheus), Route("/healthz", healthz)])


async def serve_operations(
    service: str, port: int, stop: asyncio.Event, *, host: str = "0.0.0.0", health: Health | None = None
) -> None:
    """Serve :func:`operations_app` on ``host:port`` until ``stop`` is set."""
    config = uvicorn.Config(
        operations_app(service, health),
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    # the process owns SIGTERM/SIGINT (the worker's stop event, or the API's uvicorn)
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve(), name=f"{service}-operations-port")
    try:
        await stop.wait()
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=5)


_OUTBOX = (
    "SELECT count(*) AS backlog, "
    "coalesce(extract(epoch FROM now() - min(created_at)), 0) AS oldest "
    "FROM outbox WHERE published_at IS NULL"
)
_OPEN_DEAD_LETTERS = "SELECT count(*) FROM outbox_dead_letters WHERE resolution IS NULL"
_CONSUMER_DEAD_LETTERS = "SELECT count(*) FROM dead_letters"
_JOBS = (
    "SELECT job, extract(epoch FROM max(finished_at)) AS at FROM job_runs "
    "WHERE finished_at IS NOT NULL AND error IS NULL GROUP BY job"
)


async def refresh_database_gauges(engine: AsyncEngine, service: str) -> None:
    """Read the outbox, the dead letters and ``job_runs`` (when the service has it) into gauges."""
    async with engine.connect() as conn:
        row = (await conn.execute(text(_OUTBOX))).one()
        metrics.OUTBOX_BACKLOG.labels(service).set(int(row.backlog))
        metrics.OUTBOX_OLDEST_AGE.labels(service).set(float(row.oldest))
        parked = await conn.scalar(text(_OPEN_DEAD_LETTERS))
        metrics.OUTBOX_DEAD_LETTERS_OPEN.labels(service).set(int(parked or 0))
        failed = await conn.scalar(text(_CONSUMER_DEAD_LETTERS))
        metrics.CONSUMER_DEAD_LETTERS.labels(service).set(int(failed or 0))
        if await conn.scalar(text("SELECT to_regclass('job_runs') IS NOT NULL")):
            for job in (await conn.execute(text(_JOBS))).all():
                metrics.JOB_LAST_SUCCESS.labels(service, job.job).set(float(job.at))


async def watch_database(
    engine: AsyncEngine, service: str, stop: asyncio.Event, *, interval: float = REFRESH_SECONDS
) -> None:
    """:func:`refresh_database_gauges` every ``interval`` seconds until ``stop``; an outage is counted."""
    while not stop.is_set():
        try:
            await refresh_database_gauges(engine, service)
        except Exception as exc:  # noqa: BLE001 - a database outage must not end the worker
            metrics.MONITOR_SCRAPE_ERRORS.labels(service).inc()
            log.warning("monitoring: could not read the database gauges: %s", exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)
