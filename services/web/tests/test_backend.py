"""The backend's HTTP client against a real socket server that drops a connection unanswered,
as a service does when it closes an idle keep-alive connection just as the web app reuses it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from web_factories import web_settings

from web.app import BACKEND_LIMITS
from web.backend import ApiError, Backend

OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[str, list[bytes]]]:
    """Drops the first request unanswered, answers every later one; records what came."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                seen.append(request.split(b"\r\n", 1)[0])
                if len(seen) == 1:
                    break  # close without a word
                writer.write(OK)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass  # the client closed its end
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}", seen


async def test_a_read_on_a_dropped_connection_is_repeated_once(flaky: tuple[str, list[bytes]]) -> None:
    url, seen = flaky
    async with httpx.AsyncClient(limits=BACKEND_LIMITS) as client:
        backend = Backend(web_settings(registry_url=url), client)
        assert await backend.get("registry", "/v1/lodgings", token="t") == {"ok": True}
    assert seen == [b"GET /v1/lodgings HTTP/1.1", b"GET /v1/lodgings HTTP/1.1"]


async def test_a_write_on_a_dropped_connection_is_not_repeated(flaky: tuple[str, list[bytes]]) -> None:
    url, seen = flaky
    async with httpx.AsyncClient(limits=BACKEND_LIMITS) as client:
        backend = Backend(web_settings(registry_url=url), client)
        with pytest.raises(ApiError) as refused:
            await backend.post("registry", "/v1/payments", {"amount": "1.00"}, token="t")
    assert refused.value.status == 502
    assert seen == [b"POST /v1/payments HTTP/1.1"]


def test_idle_connections_are_dropped_before_the_services_drop_them() -> None:
    assert BACKEND_LIMITS.keepalive_expiry is not None
    assert BACKEND_LIMITS.keepalive_expiry < 5  # uvicorn's timeout_keep_alive
