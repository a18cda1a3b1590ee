"""notify across the platform, with real processes, real TCP, a real broker, a real
webhook receiver (aiohttp) and a real SMTP server (aiosmtpd). One stack start-up.

- An operator's PMS subscribes; it files a declaration through filing's API and receives
  the signed CloudEvent within seconds, and verifies it with its secret.
- Tenancy: another operator subscribed to the same event type receives nothing.
- Its receiver is down for the next declaration: the delivery fails, is retried with
  backoff, and arrives once the receiver is back.
- A receipt requested by e-mail arrives through SMTP, in Spanish for a PR lodging.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from notify_factories import Receiver, Sink
from platform_harness import TODAY, Api, Platform, eventually, new_client

from notify.webhooks import signing
from taxcore.periods import Period

FILED = "roomtax.filing.declaration.filed.v1"
M = Period.of(TODAY).add_months(-2)  # a past month: its return may be filed


@pytest.fixture(scope="module")
def sink() -> Iterator[Sink]:
    s = Sink()
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
async def platform(sink: Sink) -> AsyncIterator[Platform]:
    p = Platform(
        prefix="roomtax_e2e_notify",
        env={
            "NOTIFY_WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",  # the receivers listen on 127.0.0.1
            "NOTIFY_WEBHOOK_RETRY_BASE_SECONDS": "0.5",
            "NOTIFY_WEBHOOK_RETRY_MAX_SECONDS": "2",
            "NOTIFY_SMTP_HOST": "127.0.0.1",
            "NOTIFY_SMTP_PORT": str(sink.port),
        },
    )
    try:
        await p.start(("registry", "filing", "notify"))
        yield p
    finally:
        p.stop()


async def declare(api: Api, account: str, period: Period) -> dict[str, Any]:
    body = {
        "lodging": account,
        "period": str(period),
        "room_revenue": "10000.00",
        "room_nights": 80,
        "declared": {"taxable_base": "10000.00", "tax": "900.00", "total": "900.00"},
    }
    out: dict[str, Any] = await api.post("filing", "/v1/declarations", body, expect=201)
    return out


async def test_signed_webhooks_tenancy_redelivery_and_mail(platform: Platform, sink: Sink) -> None:
    tag = uuid.uuid4().hex[:6]
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    mine = await admin.post(
        "registry",
        "/v1/operators",
        {"name": f"Faro Hospitality {tag}", "email": f"tax@faro-{tag}.example"},
        expect=201,
    )
    other = await admin.post("registry", "/v1/operators", {"name": f"Other Inns {tag}"}, expect=201)
    lodging = await admin.register_lodging(
        mine["id"],
        casino=False,
        name=f"Hotel El Faro {tag}",
        line1="1 Calle del Mar",
        municipality="San Juan",
        room_count=20,
        registered_on=M.prev().first_day.isoformat(),
    )
    account = lodging["tax_account"]
    pms = await new_client(platform, admin, f"faro-pms-{tag}", "operator", operator_id=mine["id"])
    rival = await new_client(platform, admin, f"other-pms-{tag}", "operator", operator_id=other["id"])
    ours, theirs = Receiver(), Receiver()
    await ours.start()
    await theirs.start()
    try:
        hook = await pms.post("notify", "/v1/webhooks", {"url": ours.url, "event_types": [FILED]}, expect=201)
        spy = await rival.post(
            "notify", "/v1/webhooks", {"url": theirs.url, "event_types": [FILED]}, expect=201
        )

        async def filing_knows() -> bool:
            return (await pms.call("GET", "filing", f"/v1/lodgings/{account}/periods/{M}")).status_code == 200

        await eventually(filing_knows)

        # ------------------------------------------------ filed -> signed webhook within seconds
        started = time.monotonic()
        first = await declare(pms, account, M)
        await eventually(lambda: _count(ours, 1), timeout=30, interval=0.1)
        took = time.monotonic() - started
        print(f"webhook received {took:.2f}s after filing")  # noqa: T201 - in the test log
        headers, body = ours.received[0]
        assert signing.verify(headers["Roomtax-Signature"], body, hook["secret"]) > 0
        event = json.loads(body)
        assert (event["type"], event["subject"], event["data"]["tax_account"]) == (FILED, account, account)
        assert event["data"]["declaration_id"] == first["id"]
        assert (event["data"]["period"], event["data"]["filer_kind"]) == (str(M), "operator")

        # ------------------------------------------------ tenancy: the other operator gets nothing
        assert theirs.received == []
        assert (await rival.get("notify", f"/v1/webhooks/{spy['id']}/deliveries"))["items"] == []
        assert (await rival.call("GET", "notify", f"/v1/webhooks/{hook['id']}")).status_code == 404

        # ------------------------------------------------ receiver down, then back: redelivered
        await ours.stop()
        second = await declare(pms, account, M.prev())

        async def failed_once() -> dict[str, Any] | None:
            items = (await pms.get("notify", f"/v1/webhooks/{hook['id']}/deliveries"))["items"]
            found = [d for d in items if d["event_id"] != event["id"] and d["attempts"] >= 1]
            return found[0] if found else None

        failing = await eventually(failed_once, timeout=30, interval=0.2)
        assert failing["status"] == "pending"
        assert failing["last_error"].startswith("ConnectError")
        await ours.start()
        await eventually(lambda: _count(ours, 2), timeout=30, interval=0.1)
        redelivered = json.loads(ours.received[1][1])
        assert redelivered["data"]["declaration_id"] == second["id"]
        signing.verify(ours.received[1][0]["Roomtax-Signature"], ours.received[1][1], hook["secret"])

        async def recorded() -> dict[str, Any] | None:  # the outcome is written after the POST
            log = (await pms.get("notify", f"/v1/webhooks/{hook['id']}/deliveries"))["items"]
            found = next(d for d in log if d["id"] == failing["id"])
            return found if found["status"] != "pending" else None

        done = await eventually(recorded, timeout=30, interval=0.1)
        assert done["status"] == "delivered"
        assert [a["status_code"] for a in done["log"]][-1] == 200
        assert all(a["status_code"] is None for a in done["log"][:-1])
        assert theirs.received == []

        # ------------------------------------------------ a receipt on request, by e-mail
        paid = await pms.post(
            "filing",
            "/v1/payments",
            {
                "tax_account": account,
                "amount": "900.00",
                "method": "electronic_transfer",
                "periods": [{"period": str(M), "amount": "900.00"}],
            },
            expect=201,
        )

        async def receipt_queued() -> bool:
            r = await pms.call("POST", "notify", f"/v1/payments/{paid['id']}/receipt-email")
            return r.status_code == 202

        await eventually(receipt_queued)
        await eventually(lambda: _mail(sink), timeout=30)
        (rcpt, msg) = sink.messages[-1]
        assert rcpt == [f"tax@faro-{tag}.example"]
        assert msg["Subject"] == f"Recibo de su pago de $900.00 ({account})"
        assert "por transferencia electrónica" in msg.get_content()
        sent = (await pms.get("notify", "/v1/emails"))["items"]
        assert [(m["kind"], m["status"]) for m in sent] == [("receipt", "sent")]
    finally:
        await ours.stop()
        await theirs.stop()
        for api in (admin, pms, rival):
            await api.close()


async def _count(receiver: Receiver, n: int) -> bool:
    return len(receiver.received) >= n


async def _mail(sink: Sink) -> bool:
    return bool(sink.messages)
