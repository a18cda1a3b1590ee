"""Structured JSON logs with a request id."""

from __future__ import annotations

import contextvars
import json
import logging
import os
import sys
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servicekit import metrics, telemetry

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id_var.get()
        if rid:
            entry["request_id"] = rid
        ids = telemetry.current_ids()  # the span the line was written in (servicekit.telemetry)
        if ids is not None:
            entry["trace_id"], entry["span_id"] = ids
        for key in ("path", "method", "status", "duration_ms"):
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(service: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiokafka").setLevel("WARNING")
    logging.getLogger("uvicorn.access").setLevel("WARNING")


class RequestContextMiddleware:
    """Request id (``X-Request-ID`` in and out), access log and HTTP metrics."""

    def __init__(self, app: ASGIApp, service: str) -> None:
        self.app = app
        self.service = service
        self.log = logging.getLogger(f"{service}.access")
        #: the metrics' children by (method, route, status): ``labels()`` once per kind of
        #: request, not on every request (it validates and locks)
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        # 32 random hex digits like uuid4().hex, at a fifth of its cost (0.5 vs 2.5 us)
        rid = headers.get(b"x-request-id", b"").decode("latin-1")[:100] or os.urandom(16).hex()
        token = request_id_var.set(rid)
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            elapsed = time.perf_counter() - start
            route = scope.get("route")
            path = getattr(route, "path", "unmatched")
            key = (scope["method"], path, status)
            children = self._children.get(key)
            if children is None:
                children = self._children[key] = (
                    metrics.HTTP_REQUESTS.labels(self.service, key[0], path, str(status)),
                    metrics.HTTP_LATENCY.labels(self.service, key[0], path),
                )
            children[0].inc()
            children[1].observe(elapsed)
            if path not in ("/healthz", "/readyz", "/metrics") and self.log.isEnabledFor(logging.INFO):
                self.log.info(
                    "%s %s %s",
                    scope["method"],
                    scope["path"],
                    status,
                    extra={
                        "path": scope["path"],
                        "method": scope["method"],
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 2),
                    },
                )
            request_id_var.reset(token)
