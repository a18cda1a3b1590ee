"""The front door of direct routes (``servicekit.db.DirectRoutes``): a direct route's request
is answered by its direct handler before FastAPI's router, as the route would answer it."""

from __future__ import annotations

from collections import Counter

import httpx
import pytest
from fastapi import Request, Response
from prometheus_client import REGISTRY
from starlette.types import Receive, Scope, Send

from servicekit.app import create_app, router
from servicekit.db import direct
from servicekit.errors import NotFound
from servicekit.settings import ServiceSettings
from servicekit.testing import BrokerProcess, running_app

calls: Counter[str] = Counter()
things = router(prefix="/v1", tags=["things"])


async def thing_direct(request: Request) -> Response | None:
    calls["direct"] += 1
    body = await request.body()
    if body == b"route":
        return None  # left to the route, after reading the body
    if body == b"missing":
        raise NotFound("no such thing")
    return Response(b"direct:" + body, status_code=201, media_type="text/plain")


@things.post("/things", status_code=201)
@direct(thing_direct)
async def post_thing(request: Request) -> Response:
    calls["route"] += 1
    return Response(b"route:" + await request.body(), status_code=201, media_type="text/plain")


async def part_direct(request: Request) -> Response | None:
    calls["direct"] += 1
    return Response(f"part {request.path_params['thing_id']}".encode(), media_type="text/plain")


@things.post("/things/{thing_id}/parts")
@direct(part_direct)
async def post_part(thing_id: str) -> Response:
    calls["route"] += 1
    return Response(f"route part {thing_id}".encode(), media_type="text/plain")


@pytest.fixture
async def client(chassis_db: str, broker: BrokerProcess) -> httpx.AsyncClient:
    settings = ServiceSettings(
        service_name="things", environment="test", database_url=chassis_db, kafka_bootstrap=broker.bootstrap
    )
    app = create_app(settings, title="Things", description="direct routes", routers=[things])
    calls.clear()
    async with running_app(app) as c:
        yield c  # type: ignore[misc]


def served(path: str, status: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "roomtax_http_requests_total",
            {"service": "things", "method": "POST", "route": path, "status": status},
        )
        or 0.0
    )


class TestDirectRoutes:
    async def test_the_direct_handler_answers_without_the_route(
        self, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        route = next(r for r in things.routes if getattr(r, "path", None) == "/v1/things")
        handle = route.handle

        async def counted(scope: Scope, receive: Receive, send: Send) -> None:
            calls["router"] += 1
            await handle(scope, receive, send)

        monkeypatch.setattr(route, "handle", counted)
        before = served("/v1/things", "201")
        r = await client.post("/v1/things", content=b"a", headers={"X-Request-ID": "rid-1"})
        assert (r.status_code, r.content, r.headers["x-request-id"]) == (201, b"direct:a", "rid-1")
        assert calls == {"direct": 1}  # the router never selected the route
        assert served("/v1/things", "201") == before + 1  # the route's label, as from the router
        r = await client.post("/v1/things", content=b"route")
        assert calls == {"direct": 2, "router": 1, "route": 1}

    async def test_a_domain_error_is_the_apps_problem(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/things", content=b"missing", headers={"Accept-Language": "es"})
        assert (r.status_code, r.headers["content-type"]) == (404, "application/problem+json")
        assert r.json() == {
            "type": "https://roomtax.dev/problems/not-found",
            "title": "No encontrado",
            "status": 404,
            "detail": "no such thing",
            "instance": "/v1/things",
        }
        assert calls == {"direct": 1}

    async def test_a_request_left_to_the_route_gets_its_body_and_is_offered_once(
        self, client: httpx.AsyncClient
    ) -> None:
        r = await client.post("/v1/things", content=b"route")
        assert (r.status_code, r.content) == (201, b"route:route")
        assert calls == {"direct": 1, "route": 1}

    async def test_an_idempotency_key_goes_to_the_route(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/things", content=b"a", headers={"Idempotency-Key": "k-1"})
        assert (r.status_code, r.content) == (201, b"route:a")
        assert calls == {"route": 1}

    async def test_a_path_parameter_as_the_route_converts_it(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/things/t-7/parts")
        assert (r.status_code, r.content) == (200, b"part t-7")
        assert calls == {"direct": 1}
        assert (await client.get("/v1/things/t-7/parts")).status_code == 405
