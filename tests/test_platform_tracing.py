"""One payment is one trace across filing → assessment → distribution, and the operations ports.

The four real services run with tracing on (``OTEL_TRACES_EXPORTER=otlp``) and export, with
the SDK's own OTLP/HTTP exporter, to a local collector this module runs: an HTTP server that
decodes the protobuf ``ExportTraceServiceRequest`` bodies (opentelemetry-proto) it receives.

The client posts the payment with its own W3C ``traceparent``. The trace must then hold, in
one parent chain: filing's request span (child of the client's span), assessment's consumer
span for ``filing.payment.received`` (through the outbox row, the relay's producer span and
the Kafka header), and distribution's consumer span for ``assessment.collection.posted``
emitted by that handler. Log lines written in those spans carry the trace id.

A page of the web app is one trace with the services it calls: the browser's request is the
web app's server span, its httpx calls to the services carry ``traceparent``, and the
services' request spans are their children.

Every API and worker also gets an operations port (``ROOMTAX_METRICS_PORT``): the workers
serve ``/metrics`` and ``/healthz`` there, the APIs serve ``/metrics`` there and no longer on
their public port.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from platform_harness import TODAY, Api, Platform, eventually, new_client
from web_browser import WebProcess

from servicekit.testing import free_port
from taxcore.money import fmt, round_cents
from taxcore.periods import Period, due_date

D = Decimal
R = Period.of(TODAY).prev()
TAX = round_cents(D("50000.00") * D("0.09"))  # PR §24(B): general rate 9%


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int


class Collector:
    """A local OTLP/HTTP trace receiver (``POST /v1/traces``, protobuf)."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                received = []
                for resource_spans in request.resource_spans:
                    attrs = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                    for scope in resource_spans.scope_spans:
                        received += [
                            Span(
                                service=attrs["service.name"],
                                name=s.name,
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_id=s.parent_span_id.hex(),
                                kind=s.kind,
                            )
                            for s in scope.spans
                        ]
                with collector.lock:
                    collector.spans += received
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def of_trace(self, trace_id: str) -> dict[str, Span]:
        with self.lock:
            return {s.span_id: s for s in self.spans if s.trace_id == trace_id}


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    c = Collector()
    c.thread.start()
    try:
        yield c
    finally:
        c.server.shutdown()


@pytest.fixture(scope="module")
async def platform(collector: Collector) -> AsyncIterator[Platform]:
    p = Platform(
        prefix="roomtax_e2e_tracing",
        operations_ports=True,
        env={
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "200",  # ms: spans reach the collector quickly
            "ROOMTAX_METRICS_HOST": "127.0.0.1",
        },
    )
    try:
        try:
            await p.start()
        except TimeoutError:  # a loaded machine starts eight traced processes slowly: wait on
            await asyncio.gather(*(s.wait_ready(timeout=300) for s in p.services.values()))
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
async def web(platform: Platform) -> AsyncIterator[str]:
    """The web app as its own process (``python -m web api``), tracing to the same collector."""
    process = WebProcess(
        urls={s: platform.url(s) for s in platform.services}, logs=platform.logs, env=platform.env
    )
    process.start()
    try:
        await process.wait_ready()
        yield process.url
    finally:
        process.stop()


def chain(spans: dict[str, Span], leaf: Span) -> list[Span]:
    """``leaf`` and its ancestors in the trace, root last."""
    out = [leaf]
    while out[-1].parent_id in spans:
        out.append(spans[out[-1].parent_id])
    return out


async def test_one_payment_is_one_trace_across_filing_assessment_and_distribution(
    platform: Platform, collector: Collector
) -> None:
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    tag = uuid.uuid4().hex[:6]
    operator = await admin.post("registry", "/v1/operators", {"name": f"Traced Hotels {tag}"}, expect=201)
    op_api = await new_client(platform, admin, f"traced-{tag}", "operator", operator_id=operator["id"])
    lodging = await admin.post(
        "registry",
        "/v1/lodgings",
        {
            "jurisdiction": "PR",
            "lodging_class": "hotel",
            "name": f"Hotel Traza {tag}",
            "address": {"line1": "2 Calle Sol", "municipality": "San Juan"},
            "room_count": 40,
            "operator_id": operator["id"],
            "registered_on": R.first_day.isoformat(),
        },
        expect=201,
    )
    account = lodging["tax_account"]
    await eventually(
        lambda: _ok(op_api.call("GET", "filing", f"/v1/lodgings/{account}/periods/{R}")), timeout=90
    )
    late = TODAY > due_date("PR", R)
    payer = {"kind": "operator", "id": operator["id"]}
    declaration = {
        "lodging": account,
        "period": str(R),
        "room_revenue": "50000.00",
        "room_nights": 250,
        "declared": {"taxable_base": "50000.00", "tax": fmt(TAX), "total": fmt(TAX)},
    }
    payment = {
        "tax_account": account,
        "amount": fmt(TAX),
        "method": "electronic_transfer",
        "periods": [{"period": str(R), "amount": fmt(TAX)}],
    }
    if late:  # past R's due date only the agency records a document received on time
        received = {"received_on": due_date("PR", R).isoformat()}
        writer, declaration, payment = (
            admin,
            {**declaration, **received, "filer": payer},
            {
                **payment,
                **received,
                "payer": payer,
            },
        )
    else:
        writer = op_api
    await writer.post("filing", "/v1/declarations", declaration, expect=201)

    # the payment goes in once assessment holds the declaration. Declarations and payments come
    # on two topics (filing.declarations, filing.payments) with no order between them: a payment
    # applied before its declaration is a credit, and the declaration's event then posts the
    # collection (in the declaration's trace, the event that caused the posting). In a batch of
    # many payments, each payment's collection continues its own payment's trace
    # (assessment.accounts.service.BatchTraces; services/assessment/tests/test_batch_traces.py).
    async def declared() -> bool:  # 404 until assessment knows the account
        r = await admin.call("GET", "assessment", f"/v1/accounts/{account}/statement")
        return r.status_code == 200 and [p["period"] for p in r.json()["periods"]] == [str(R)]

    await eventually(declared, timeout=120)

    trace_id, client_span = secrets.token_hex(16), secrets.token_hex(8)
    await writer.call(
        "POST",
        "filing",
        "/v1/payments",
        json=payment,
        headers={"traceparent": f"00-{trace_id}-{client_span}-01"},
        expect=201,
    )

    async def collected() -> bool:
        entries = await admin.pages("distribution", "/v1/ledger/entries")
        return any(e["kind"] == "collection" and f" for {account} " in e["description"] for e in entries)

    await eventually(collected, timeout=120)

    async def distribution_span() -> Span | None:
        return next(
            (
                s
                for s in collector.of_trace(trace_id).values()
                if s.service == "roomtax-distribution"
                and s.name == "process roomtax.assessment.collection.posted.v1"
            ),
            None,
        )

    # each service exports its spans on its own schedule: the leaf can arrive before one of its
    # ancestors does, so the path is awaited whole (it ends at a span whose parent is missing
    # until then). A broken path never completes: the failure lists the spans that came.
    async def whole_path() -> list[Span] | None:
        leaf = await distribution_span()
        if leaf is None:
            return None
        path = chain(collector.of_trace(trace_id), leaf)
        return path if path[-1].parent_id == client_span else None

    try:
        path = await eventually(whole_path, timeout=60)
    except AssertionError as exc:  # which spans came: a lost export or a broken trace
        in_trace = sorted(
            (s.service, s.kind, s.name, s.span_id[:8], s.parent_id[:8])
            for s in collector.of_trace(trace_id).values()
        )
        raise AssertionError(f"{exc}; trace {trace_id[:8]}: {in_trace}") from exc
    spans = collector.of_trace(trace_id)
    # the root of what the services exported is filing's request span, child of the client's span
    assert path[-1].parent_id == client_span
    assert (path[-1].service, path[-1].kind) == ("roomtax-filing", 2)  # SPAN_KIND_SERVER
    services_in_order = [s.service for s in reversed(path)]
    assert sorted(set(services_in_order), key=services_in_order.index) == [
        "roomtax-filing",
        "roomtax-assessment",
        "roomtax-distribution",
    ]
    consumers = [(s.service, s.name) for s in reversed(path) if s.name.startswith("process ")]
    assert consumers == [
        ("roomtax-assessment", "process roomtax.filing.payment.received.v1"),
        ("roomtax-distribution", "process roomtax.assessment.collection.posted.v1"),
    ]
    # each hop through Kafka is the relay's producer span, then the consumer's span
    producers = [(s.service, s.name) for s in reversed(path) if s.kind == 4]  # SPAN_KIND_PRODUCER
    assert producers == [
        ("roomtax-filing", "filing.payments send"),
        ("roomtax-assessment", "assessment.collections send"),
    ]

    # the request's access log line carries the trace and its span
    lines = [json.loads(line) for line in platform.log_text("filing").splitlines() if line.startswith("{")]
    (access,) = [
        x for x in lines if x.get("msg") == "POST /v1/payments 201" and x.get("trace_id") == trace_id
    ]
    assert access["span_id"] in spans
    await admin.close()
    await op_api.close()


async def test_a_web_page_is_one_trace_with_the_service_calls_it_makes(
    platform: Platform, collector: Collector, web: str
) -> None:
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    email, password = f"traced-{uuid.uuid4().hex[:8]}@example.pr", "correct horse battery"
    await admin.post(
        "registry",
        "/v1/people/users",
        {"email": email, "name": "Luz Traza", "role": "agency-auditor", "password": password},
        expect=201,
    )
    await admin.close()
    async with httpx.AsyncClient(base_url=web, timeout=60) as browser:
        form = await browser.get("/sign-in")
        token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', form.text)
        assert token is not None
        signed_in = await browser.post(
            "/sign-in", data={"csrf_token": token.group(1), "email": email, "password": password}
        )
        assert (signed_in.status_code, signed_in.headers["location"]) == (303, "/agency")
        trace_id, client_span = secrets.token_hex(16), secrets.token_hex(8)
        page = await browser.get("/agency", headers={"traceparent": f"00-{trace_id}-{client_span}-01"})
        assert page.status_code == 200, page.text[:500]

    def served(service: str, route: str) -> list[Span]:
        return [
            s
            for s in collector.of_trace(trace_id).values()
            if (s.service, s.kind) == (service, 2) and s.name.startswith(f"GET {route}")
        ]

    async def all_arrived() -> bool:
        return bool(
            served("roomtax-web", "/agency")
            and served("roomtax-assessment", "/v1/dashboard/aging")
            and served("roomtax-distribution", "/v1/funds")
        )

    # spans are exported every 200 ms (under a load of 21 on 2 cores: 0.5 s at most, measured)
    try:
        await eventually(all_arrived, timeout=60)
    except AssertionError as exc:  # which spans came, from where: a lost export or a broken trace
        with collector.lock:
            web_spans = [
                (s.name, s.kind, s.trace_id[:8], s.parent_id[:8])
                for s in collector.spans
                if s.service == "roomtax-web"
            ]
            routes = [
                (s.service, s.name, s.trace_id[:8], s.parent_id[:8])
                for s in collector.spans
                if s.kind == 2 and s.name.startswith(("GET /v1/dashboard/aging", "GET /v1/funds"))
            ]
        in_trace = sorted((s.service, s.kind, s.name) for s in collector.of_trace(trace_id).values())
        raise AssertionError(
            f"{exc}; trace {trace_id[:8]}: {in_trace}; web spans: {web_spans}; route spans: {routes}"
        ) from exc
    spans = collector.of_trace(trace_id)
    (page_span,) = served("roomtax-web", "/agency")
    assert page_span.parent_id == client_span  # the browser's context continues in the web app
    for service, route in (
        ("roomtax-assessment", "/v1/dashboard/aging"),
        ("roomtax-distribution", "/v1/funds"),
    ):
        for leaf in served(service, route):
            path = chain(spans, leaf)
            # the service's request span is the child of the web app's httpx call (a client span)
            assert (path[1].service, path[1].kind) == ("roomtax-web", 3)  # SPAN_KIND_CLIENT
            assert page_span in path


async def _ok(response: Any) -> bool:
    return bool((await response).status_code == 200)


async def test_workers_serve_metrics_and_health_on_their_operations_port(platform: Platform) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        for name in ("filing", "assessment", "distribution", "registry"):
            worker = platform.operations_url(name, "worker")
            health = await eventually(lambda w=worker: _json_if_ok(client, f"{w}/healthz"), timeout=60)
            assert (health["service"], health["status"], health["broker"], health["dead_tasks"]) == (
                name,
                "ok",
                "ok",
                [],
            )

            async def refreshed(worker: str = worker, name: str = name) -> str | None:
                text = (await client.get(f"{worker}/metrics")).text
                return text if f'roomtax_outbox_backlog{{service="{name}"}}' in text else None

            text = await eventually(refreshed, timeout=60)
            assert f'roomtax_outbox_dead_letters_open{{service="{name}"}} 0.0' in text
            assert f'roomtax_consumer_dead_letters{{service="{name}"}} 0.0' in text
            assert "roomtax_worker_broker_up 1.0" in text
            # the API: /metrics on its operations port, not on the public one
            api = platform.operations_url(name, "api")
            scraped = await client.get(f"{api}/metrics")
            assert scraped.status_code == 200
            assert "roomtax_http_requests_total" in scraped.text
            assert (await client.get(f"{platform.url(name)}/metrics")).status_code == 404
        # assessment consumed filing's events: latency and lag per partition are reported
        handled = (
            'roomtax_consumer_handler_seconds_count{consumer="assessment-filing",'
            'outcome="applied",type="roomtax.filing.payment.received.v1"} 1.0'
        )

        async def consumed() -> str | None:  # the payment may still be on its way to assessment
            text = (await client.get(f"{platform.operations_url('assessment', 'worker')}/metrics")).text
            return text if handled in text else None

        text = await eventually(consumed, timeout=60)
        assert 'roomtax_consumer_lag{consumer="assessment-filing",partition=' in text


async def _json_if_ok(client: httpx.AsyncClient, url: str) -> Any:
    try:
        r = await client.get(url)
    except httpx.HTTPError:
        return None
    return r.json() if r.status_code == 200 else None
