"""The FastAPI application factory every service uses."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from aiokafka import AIOKafkaClient
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.telemetry import TelemetryConfig
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from servicekit import monitoring, outbox_api, telemetry
from servicekit.auth import TokenIssuer, TokenVerifier
from servicekit.db import DirectRoutes, TransactionalRoute, make_engine, make_sessionmaker
from servicekit.errors import install_error_handlers
from servicekit.limits import BodyLimitMiddleware
from servicekit.logs import RequestContextMiddleware, configure_logging
from servicekit.openapi import build_document
from servicekit.revocations import Denylist
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings

log = logging.getLogger("servicekit.app")


#: FastAPI's own OpenTelemetry (0.165) off: the services trace with :mod:`servicekit.telemetry`
#: (the instrumentation its ``instrument_app`` installs when tracing is on, which FastAPI's
#: then leaves alone), and they export no OpenTelemetry metrics or logs (Prometheus, JSON
#: lines). Left on, it asked the global tracer, meter and logger providers on every request
#: whether any was configured (three lookups, environment reads among them; issue 12).
NATIVE_TELEMETRY_OFF: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


def router(**kwargs: Any) -> APIRouter:
    """An APIRouter whose routes each run in one committed-or-rolled-back transaction."""
    return APIRouter(route_class=TransactionalRoute, **kwargs)


async def broker_reachable(
    bootstrap: str, timeout: float = 2.0, options: Mapping[str, Any] | None = None
) -> bool:
    """Whether the broker answers; ``options``: TLS/SASL (:func:`servicekit.kafka.client_options`)."""
    client = AIOKafkaClient(
        bootstrap_servers=bootstrap, request_timeout_ms=int(timeout * 1000), **(options or {})
    )
    try:
        await asyncio.wait_for(client.bootstrap(), timeout=timeout)
        return True
    except Exception:  # noqa: BLE001 - readiness reports, never raises
        return False
    finally:
        await client.close()


def create_app(
    settings: ServiceSettings,
    *,
    title: str,
    description: str,
    routers: Sequence[APIRouter],
    version: str = "1.0.0",
    on_startup: Callable[[FastAPI], Any] | None = None,
    upload_paths: Sequence[str] = (),
    runtime: Runtime | None = None,
) -> FastAPI:
    """The service's app: error handlers, body limits, request context, health, metrics,
    the outbox dead letters (:mod:`servicekit.outbox_api`) and the service's routers.

    ``upload_paths`` are the POST paths whose bodies may reach ``max_upload_bytes``;
    every other body is capped at ``max_body_bytes`` (:mod:`servicekit.limits`).
    ``runtime`` (the law and the clock, :mod:`servicekit.runtime`) is built from the
    environment when not given, once, and held on ``app.state.runtime``.
    """
    configure_logging(settings.service_name, settings.log_level)
    telemetry.configure_tracing(settings.service_name, settings.environment)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(
            settings.database_url,
            application_name=f"{settings.service_name}-api",
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
            pool_timeout=settings.db_pool_timeout,
        )
        app.state.engine = engine
        app.state.sessionmaker = make_sessionmaker(engine, service=settings.service_name)
        try:  # loaded before the first request; a database outage is retried by the watcher
            await asyncio.wait_for(denylist.load(engine), timeout=5.0)
        except Exception as exc:  # noqa: BLE001
            log.warning("revocation denylist not loaded at start: %s", exc)
        if settings.jwks_url:  # an unreachable registry now is retried on the first token
            try:
                await app.state.token_verifier.refresh()
            except Exception as exc:  # noqa: BLE001
                log.warning("JWKS not fetched at start from %s: %s", settings.jwks_url, exc)
        stop = asyncio.Event()
        watcher = asyncio.create_task(
            denylist.watch(engine, stop, interval=settings.revocation_refresh_seconds),
            name="revocation-denylist",
        )
        background = [watcher]
        if settings.metrics_port is not None:  # /metrics on the internal port only
            background.append(
                asyncio.create_task(
                    monitoring.serve_operations(
                        settings.service_name, settings.metrics_port, stop, host=settings.metrics_host
                    ),
                    name="operations-port",
                )
            )
        try:
            if on_startup is not None:
                await on_startup(app)
            yield
        finally:
            stop.set()
            for task in background:
                await task
            await engine.dispose()

    app = FastAPI(
        title=title,
        description=description,
        version=version,
        lifespan=lifespan,
        telemetry=NATIVE_TELEMETRY_OFF,
    )
    app.state.settings = settings
    app.state.runtime = runtime or Runtime.from_environment()
    denylist = Denylist(token_ttl_seconds=settings.token_ttl_seconds)
    app.state.denylist = denylist
    app.state.token_verifier = TokenVerifier(
        settings.jwt_public_key,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        denylist=denylist,
        jwks_url=settings.jwks_url,
        jwks_min_refresh_seconds=settings.jwks_min_refresh_seconds,
    )
    if settings.signs_tokens:
        app.state.token_issuer = TokenIssuer(
            settings.jwt_private_key,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            ttl_seconds=settings.token_ttl_seconds,
        )
    app.state.ready_cache = (0.0, None)
    install_error_handlers(app)
    app.add_middleware(  # the innermost: inside the body limits and the request context
        DirectRoutes,
        routes=[route for r in routers for route in r.routes],  # included without a prefix
        exception_handlers=app.exception_handlers,
    )
    app.add_middleware(
        BodyLimitMiddleware,
        max_body_bytes=settings.max_body_bytes,
        max_upload_bytes=settings.max_upload_bytes,
        upload_paths=upload_paths,
    )
    app.add_middleware(RequestContextMiddleware, service=settings.service_name)

    @app.get("/healthz", tags=["operations"], summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "service": settings.service_name}

    @app.get(
        "/readyz",
        tags=["operations"],
        summary="Readiness: the database is reachable",
        description=(
            "An API's writes touch only PostgreSQL (events leave through the outbox), so its "
            "readiness depends on the database alone: a broker outage delays events, it does "
            "not stop the API. The workers report the broker's health (their heartbeat)."
        ),
        responses={503: {"description": "Not ready"}},
    )
    async def readyz(request: Request) -> JSONResponse:
        checked_at, cached = request.app.state.ready_cache
        if cached is not None and time.monotonic() - checked_at < 2.0:
            return JSONResponse(cached, status_code=200 if cached["status"] == "ready" else 503)
        checks: dict[str, str] = {}
        try:
            async with request.app.state.engine.connect() as conn:
                await asyncio.wait_for(conn.execute(text("SELECT 1")), timeout=2.0)
            checks["database"] = "ok"
        except Exception as exc:  # noqa: BLE001
            checks["database"] = f"unavailable: {type(exc).__name__}"
        ok = all(v == "ok" for v in checks.values())
        body = {"status": "ready" if ok else "not ready", "checks": checks}
        request.app.state.ready_cache = (time.monotonic(), body)
        return JSONResponse(body, status_code=200 if ok else 503)

    if settings.metrics_port is None:  # else served on the operations port (servicekit.monitoring)

        @app.get(
            "/metrics", tags=["operations"], summary="Prometheus metrics", response_class=PlainTextResponse
        )
        async def prometheus() -> PlainTextResponse:
            return PlainTextResponse(generate_latest().decode(), media_type=CONTENT_TYPE_LATEST)

    app.include_router(outbox_api.router)
    for r in routers:
        app.include_router(r)

    def openapi() -> dict[str, Any]:
        if not app.openapi_schema:
            server = settings.public_url or "/"
            app.openapi_schema = build_document(
                app,
                title=title,
                version=version,
                description=description,
                servers=[{"url": server, "description": f"the {settings.service_name} API"}],
                token_url=settings.token_url,
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    telemetry.instrument_app(app)
    return app
