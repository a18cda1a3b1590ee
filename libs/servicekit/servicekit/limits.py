"""Request body limits, enforced while the body is read.

Every request body is capped at ``max_body_bytes`` (1 MiB by default: a monthly
return is a few kilobytes); only the upload routes a service names (the filing
service's remittance schedules) take up to ``max_upload_bytes``. A larger body is
answered ``413`` problem+json -- at once when ``Content-Length`` says so, and as
soon as the limit is crossed for a chunked body without a length, so the service
never holds more than the limit in memory.
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servicekit.errors import PayloadTooLarge, problem_response, too_large_problem

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class BodyLimitMiddleware:
    """ASGI middleware capping request bodies (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, max_upload_bytes: int, upload_paths: Collection[str] = ()
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_upload_bytes = max_upload_bytes
        self.upload_paths = frozenset(p.rstrip("/") for p in upload_paths)

    def limit_for(self, method: str, path: str) -> int:
        if method in BODY_METHODS and path.rstrip("/") in self.upload_paths:
            return self.max_upload_bytes
        return self.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["method"], scope["path"])
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            await self._refuse(limit, scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except PayloadTooLarge:
            # Read outside a route (a middleware): answer here unless a response began.
            if started:
                raise
            await self._refuse(limit, scope, receive, send)

    @staticmethod
    async def _refuse(limit: int, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(too_large_problem(limit, scope["path"]), {"Connection": "close"})
        await response(scope, receive, send)
