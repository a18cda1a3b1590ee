"""Tenant isolation on every notify route: another party's webhook, delivery, payment or
e-mail is a 404 (never a 403 that would confirm it exists); read-only roles get 403 on
every write; the agency's readers see everything."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from notify_factories import ADMIN, DASHBOARD, DB, apply, declaration, event, lodging, notice, scalar, webhook

from notify.settings import NotifySettings
from servicekit.testing import auth

OWNER = auth("operator", operator_id="op-own")
INTRUDER = auth("operator", operator_id="op-intruder")
FACILITATOR = auth("facilitator", facilitator_id="fac-intruder")
AUDITOR = auth("agency-auditor")
FILED = "roomtax.filing.declaration.filed.v1"


@pytest.fixture
async def owned(client: httpx.AsyncClient, db: DB, notify_settings: NotifySettings) -> dict[str, Any]:
    hook = await webhook(client, OWNER, "http://127.0.0.1:9/hooks", FILED)
    account = await lodging(db, notify_settings, operator_id="op-own")
    await apply(db, notify_settings, declaration(account))
    await apply(db, notify_settings, notice(account))
    payment = {
        "payment_id": "pay-iso",
        "tax_account": account,
        "jurisdiction": "PR",
        "amount": "1.00",
        "method": "ach",
        "received_on": "2026-12-08",
        "payer_kind": "operator",
        "payer_id": "op-own",
        "periods": [],
    }
    await apply(db, notify_settings, event("roomtax.filing.payment.received.v1", payment))
    delivery = await scalar(db, "SELECT id FROM deliveries WHERE subscription_id = :s", s=hook["id"])
    return {"hook": hook["id"], "delivery": delivery}


def routes(o: dict[str, Any]) -> list[tuple[str, str]]:
    h, d = o["hook"], o["delivery"]
    return [
        ("GET", f"/v1/webhooks/{h}"),
        ("GET", f"/v1/webhooks/{h}/deliveries"),
        ("DELETE", f"/v1/webhooks/{h}"),
        ("POST", f"/v1/webhooks/{h}/rotate-secret"),
        ("POST", f"/v1/webhooks/{h}/enable"),
        ("POST", f"/v1/webhooks/{h}/deliveries/{d}/redeliver"),
        ("POST", "/v1/payments/pay-iso/receipt-email"),
    ]


class TestIsolation:
    @pytest.mark.parametrize("who", [INTRUDER, FACILITATOR])
    async def test_another_partys_objects_are_404(
        self, client: httpx.AsyncClient, db: DB, owned: dict[str, Any], who: dict[str, str]
    ) -> None:
        for method, path in routes(owned):
            r = await client.request(method, path, headers=who)
            assert r.status_code == 404, (method, path, r.status_code)
        assert (await client.get("/v1/webhooks", headers=who)).json()["items"] == []
        assert (await client.get("/v1/emails", headers=who)).json()["items"] == []
        assert (
            await scalar(
                db, "SELECT count(*) FROM subscriptions WHERE id = :i AND deleted_at IS NULL", i=owned["hook"]
            )
            == 1
        )

    @pytest.mark.parametrize("who", [DASHBOARD, AUDITOR])
    async def test_read_only_roles_read_all_and_change_nothing(
        self, client: httpx.AsyncClient, owned: dict[str, Any], who: dict[str, str]
    ) -> None:
        for method, path in routes(owned):
            r = await client.request(method, path, headers=who)
            assert r.status_code == (200 if method == "GET" else 403), (method, path, r.status_code)
        assert [w["id"] for w in (await client.get("/v1/webhooks", headers=who)).json()["items"]] == [
            owned["hook"]
        ]
        kinds = [m["kind"] for m in (await client.get("/v1/emails", headers=who)).json()["items"]]
        assert kinds == ["notice"]

    async def test_the_owner_and_the_admin_may(
        self, client: httpx.AsyncClient, owned: dict[str, Any]
    ) -> None:
        assert (await client.get(f"/v1/webhooks/{owned['hook']}", headers=OWNER)).status_code == 200
        assert (
            await client.post(f"/v1/webhooks/{owned['hook']}/rotate-secret", headers=ADMIN)
        ).status_code == 200
        assert (await client.post("/v1/payments/pay-iso/receipt-email", headers=OWNER)).status_code == 202
