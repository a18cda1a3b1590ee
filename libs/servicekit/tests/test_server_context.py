"""Each request a server process handles starts from an empty context (telemetry.SERVER_OPTIONS).

The tracing middleware keeps the request's span in a context variable. Two requests pipelined
on one connection make uvicorn start the second from inside the first's task (when its response
completes), so without the option the second inherits the first's context: its span became an
internal span of the first request's trace and its own ``traceparent`` was ignored.
"""

from __future__ import annotations

import asyncio
import contextvars
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

from servicekit import telemetry

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="none")


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with the value this request found in its context, then sets its own path."""
    if scope["type"] != "http":
        return
    found = CURRENT.get()
    CURRENT.set(scope["path"])
    body = found.encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]}
    )
    await send({"type": "http.response.body", "body": body})


async def test_a_pipelined_request_does_not_see_the_previous_requests_context() -> None:
    listening = socket.create_server(("127.0.0.1", 0))  # connections queue until uvicorn serves
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, **telemetry.SERVER_OPTIONS))
    serving = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        host = f"Host: 127.0.0.1:{port}\r\n"
        writer.write(f"GET /first HTTP/1.1\r\n{host}\r\nGET /second HTTP/1.1\r\n{host}\r\n".encode())
        await writer.drain()
        bodies = []
        for _ in range(2):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            bodies.append(await reader.readexactly(length))
        writer.close()
        await writer.wait_closed()
        assert bodies == [b"none", b"none"]
    finally:
        server.should_exit = True
        await serving
