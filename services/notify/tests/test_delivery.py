"""Webhook deliveries to a real HTTP receiver (aiohttp on a free port): signed, retried
with exponential backoff, logged per attempt, redelivered by hand, disabled after
persistent failure with a notice to the owner."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime

import httpx
import pytest
from notify_factories import DB, Receiver, apply, declaration, lodging, operator, scalar, webhook

from notify.settings import NotifySettings
from notify.webhooks import signing
from notify.webhooks.delivery import deliver_due
from servicekit.runtime import SystemClock
from servicekit.testing import auth

OP = auth("operator", operator_id="op-d")
CLOCK = SystemClock()
FILED = "roomtax.filing.declaration.filed.v1"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    await r.start()
    yield r
    await r.stop()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as c:
        yield c


async def until_due(db: DB, settings: NotifySettings, http: httpx.AsyncClient, *, timeout: float = 10) -> int:
    """Run the delivery loop's step until it attempts something (a retry waits its backoff)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if attempted := await deliver_due(db, settings, http, clock=CLOCK):
            return attempted
        await asyncio.sleep(0.05)
    raise AssertionError("nothing became due")


async def filed(db: DB, settings: NotifySettings) -> str:
    account = await lodging(db, settings, operator_id="op-d")
    ev = declaration(account)
    await apply(db, settings, ev)
    return ev.id


class TestDelivery:
    async def test_signed_cloudevent_verifies(
        self,
        client: httpx.AsyncClient,
        db: DB,
        notify_settings: NotifySettings,
        receiver: Receiver,
        http: httpx.AsyncClient,
    ) -> None:
        hook = await webhook(client, OP, receiver.url, FILED)
        event_id = await filed(db, notify_settings)
        assert await deliver_due(db, notify_settings, http, clock=CLOCK) == 1
        [(headers, body)] = receiver.received
        assert signing.verify(headers["Roomtax-Signature"], body, hook["secret"]) > 0
        assert json.loads(body)["id"] == event_id
        assert headers["Content-Type"] == "application/cloudevents+json"
        assert headers["Roomtax-Event-Type"] == FILED
        log = (await client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=OP)).json()["items"]
        assert [(d["event_id"], d["status"], d["attempts"]) for d in log] == [(event_id, "delivered", 1)]
        assert [(a["status_code"], a["error"], a["manual"]) for a in log[0]["log"]] == [(200, None, False)]
        assert await deliver_due(db, notify_settings, http, clock=CLOCK) == 0  # delivered once

    async def test_receiver_down_then_up_is_retried_with_backoff(
        self,
        client: httpx.AsyncClient,
        db: DB,
        notify_settings: NotifySettings,
        receiver: Receiver,
        http: httpx.AsyncClient,
    ) -> None:
        hook = await webhook(client, OP, receiver.url, FILED)
        await receiver.stop()  # down: connection refused
        await filed(db, notify_settings)
        assert await deliver_due(db, notify_settings, http, clock=CLOCK) == 1
        receiver.status = 503
        await receiver.start()
        assert await until_due(db, notify_settings, http) == 1  # 503: a failure too
        receiver.status = 200
        assert await until_due(db, notify_settings, http) == 1
        [delivery] = (await client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=OP)).json()["items"]
        assert (delivery["status"], delivery["attempts"], delivery["last_status_code"]) == (
            "delivered",
            3,
            200,
        )
        codes = [(a["status_code"], (a["error"] or "")[:12]) for a in delivery["log"]]
        assert codes == [(None, "ConnectError"), (503, "HTTP 503"), (200, "")]
        at = [datetime.fromisoformat(a["attempted_at"]) for a in delivery["log"]]
        # base 0.2 s, doubled: the second attempt waits >= 0.2 s, the third >= 0.4 s
        assert (at[1] - at[0]).total_seconds() >= 0.2
        assert (at[2] - at[1]).total_seconds() >= 0.4
        assert len(receiver.received) == 2

    async def test_manual_redelivery(
        self,
        client: httpx.AsyncClient,
        db: DB,
        notify_settings: NotifySettings,
        receiver: Receiver,
        http: httpx.AsyncClient,
    ) -> None:
        hook = await webhook(client, OP, receiver.url, FILED)
        await filed(db, notify_settings)
        await deliver_due(db, notify_settings, http, clock=CLOCK)
        [delivery] = (await client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=OP)).json()["items"]
        r = await client.post(f"/v1/webhooks/{hook['id']}/deliveries/{delivery['id']}/redeliver", headers=OP)
        assert (r.status_code, r.json()["status"]) == (202, "pending")
        assert await deliver_due(db, notify_settings, http, clock=CLOCK) == 1
        assert len(receiver.received) == 2
        assert receiver.received[0][1] == receiver.received[1][1]  # the same body, signed again
        [delivery] = (await client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=OP)).json()["items"]
        assert [a["manual"] for a in delivery["log"]] == [False, True]
        unknown = await client.post(f"/v1/webhooks/{hook['id']}/deliveries/nope/redeliver", headers=OP)
        assert unknown.status_code == 404

    async def test_rotated_secret_signs_with_both(
        self,
        client: httpx.AsyncClient,
        db: DB,
        notify_settings: NotifySettings,
        receiver: Receiver,
        http: httpx.AsyncClient,
    ) -> None:
        hook = await webhook(client, OP, receiver.url, FILED)
        new = (await client.post(f"/v1/webhooks/{hook['id']}/rotate-secret", headers=OP)).json()["secret"]
        await filed(db, notify_settings)
        await deliver_due(db, notify_settings, http, clock=CLOCK)
        [(headers, body)] = receiver.received
        assert headers["Roomtax-Signature"].count("v1=") == 2
        signing.verify(headers["Roomtax-Signature"], body, new)
        signing.verify(headers["Roomtax-Signature"], body, hook["secret"])

    async def test_persistent_failure_disables_and_tells_the_owner(
        self,
        client: httpx.AsyncClient,
        db: DB,
        notify_settings: NotifySettings,
        receiver: Receiver,
        http: httpx.AsyncClient,
    ) -> None:
        await operator(db, notify_settings, operator_id="op-d", email="ops@hotel.example", name="Hotel Co")
        receiver.status = 500
        hook = await webhook(client, OP, receiver.url, FILED)
        await filed(db, notify_settings)
        settings = notify_settings.model_copy(update={"webhook_give_up_after_seconds": 0.5})
        while (await client.get(f"/v1/webhooks/{hook['id']}", headers=OP)).json()["status"] == "active":
            await until_due(db, settings, http)
        got = (await client.get(f"/v1/webhooks/{hook['id']}", headers=OP)).json()
        assert got["disabled_reason"].endswith("kept failing for 0.5 seconds: HTTP 500")
        [delivery] = (await client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=OP)).json()["items"]
        assert delivery["status"] == "failed"
        [mail] = (await client.get("/v1/emails", headers=OP)).json()["items"]
        assert (mail["kind"], mail["to_address"], mail["status"]) == (
            "webhook_disabled",
            "ops@hotel.example",
            "pending",
        )
        # the operator's lodgings are in Puerto Rico: Spanish
        assert mail["subject"] == f"Se desactivó su webhook de Roomtax a {receiver.url}"
        # a disabled webhook is not redelivered until enabled
        r = await client.post(f"/v1/webhooks/{hook['id']}/deliveries/{delivery['id']}/redeliver", headers=OP)
        assert r.status_code == 409
        receiver.status = 200
        await client.post(f"/v1/webhooks/{hook['id']}/enable", headers=OP)
        r = await client.post(f"/v1/webhooks/{hook['id']}/deliveries/{delivery['id']}/redeliver", headers=OP)
        assert r.status_code == 202
        assert await deliver_due(db, settings, http, clock=CLOCK) == 1
        assert (
            await scalar(db, "SELECT status FROM deliveries WHERE id = :i", i=delivery["id"]) == "delivered"
        )


class TestTargetCheckedAtDelivery:
    async def test_a_target_now_private_is_refused_and_never_called(
        self,
        client: httpx.AsyncClient,
        db: DB,
        notify_settings: NotifySettings,
        receiver: Receiver,
        http: httpx.AsyncClient,
    ) -> None:
        hook = await webhook(client, OP, receiver.url, FILED)  # allowed when subscribed
        await filed(db, notify_settings)
        strict = notify_settings.model_copy(update={"webhook_allow_private_targets": False})
        assert await deliver_due(db, strict, http, clock=CLOCK) == 1
        assert receiver.received == []
        [delivery] = (await client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=OP)).json()["items"]
        assert (delivery["status"], delivery["last_status_code"]) == ("pending", None)
        assert (
            delivery["last_error"] == "target refused: resolves to a private or reserved address (127.0.0.1)"
        )
