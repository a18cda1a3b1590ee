"""``/v1/webhooks``: subscribe, list, rotate, enable, delete; bad input changes nothing."""

from __future__ import annotations

import httpx
import pytest
from notify_factories import ADMIN, DASHBOARD, DB, scalar, webhook

from notify.webhooks.sealing import DEV_WEBHOOK_SECRET_KEY, box_for
from servicekit.testing import auth

OP = auth("operator", operator_id="op-api")
FILED = "roomtax.filing.declaration.filed.v1"
NOTICE = "roomtax.assessment.notice.issued.v1"


class TestCreate:
    async def test_created_with_secret_shown_once(self, client: httpx.AsyncClient) -> None:
        made = await webhook(client, OP, "http://127.0.0.1:9/hooks", NOTICE, FILED, FILED)
        assert made["secret"].startswith("whsec_")
        assert made["event_types"] == [NOTICE, FILED]  # sorted, once each
        assert (made["owner_kind"], made["owner_id"], made["status"]) == ("operator", "op-api", "active")
        assert made["created_by"].startswith("client:test-operator-op-api")
        got = (await client.get(f"/v1/webhooks/{made['id']}", headers=OP)).json()
        assert "secret" not in got
        assert got["url"] == "http://127.0.0.1:9/hooks"

    async def test_agency_integration_is_owned_by_the_agency(self, client: httpx.AsyncClient) -> None:
        made = await webhook(client, ADMIN, "http://127.0.0.1:9/hooks", "roomtax.distribution.run.posted.v1")
        assert (made["owner_kind"], made["owner_id"]) == ("agency", "agency")

    @pytest.mark.parametrize(
        ("body", "pointer", "detail"),
        [
            (
                {"url": "http://127.0.0.1:9/x", "event_types": [FILED, "roomtax.nope.v1"]},
                "#/body/event_types/1",
                "unknown event type 'roomtax.nope.v1' (see GET /v1/webhooks/event-types)",
            ),
            (
                {"url": "http://127.0.0.1:9/x", "event_types": ["roomtax.assessment.collection.posted.v1"]},
                "#/body/event_types/0",
                "unknown event type 'roomtax.assessment.collection.posted.v1' "
                "(see GET /v1/webhooks/event-types)",
            ),
            (
                {"url": "ftp://127.0.0.1/x", "event_types": [FILED]},
                "#/body/url",
                "must be an http or https URL",
            ),
            ({"url": "http://127.0.0.1:9/x", "event_types": []}, "#/body/event_types", None),
            ({"event_types": [FILED]}, "#/body/url", None),
        ],
    )
    async def test_bad_input_names_the_field_and_changes_nothing(
        self, client: httpx.AsyncClient, db: DB, body: dict[str, object], pointer: str, detail: str | None
    ) -> None:
        before = await scalar(db, "SELECT count(*) FROM subscriptions")
        r = await client.post("/v1/webhooks", json=body, headers=OP)
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"
        error = r.json()["errors"][0]
        assert error["pointer"] == pointer
        if detail is not None:
            assert error["detail"] == detail
        assert await scalar(db, "SELECT count(*) FROM subscriptions") == before

    async def test_read_only_roles_may_not_subscribe(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/webhooks", json={"url": "http://127.0.0.1:9/x", "event_types": [FILED]}, headers=DASHBOARD
        )
        assert r.status_code == 403

    async def test_no_token(self, client: httpx.AsyncClient) -> None:
        assert (await client.get("/v1/webhooks")).status_code == 401


class TestPrivateTargets:
    async def test_refused_when_the_setting_is_off(
        self, client: httpx.AsyncClient, service_app: object
    ) -> None:
        settings = service_app.state.settings  # type: ignore[attr-defined]
        settings.webhook_allow_private_targets = False
        try:
            r = await client.post(
                "/v1/webhooks", json={"url": "http://10.0.0.5/x", "event_types": [FILED]}, headers=OP
            )
        finally:
            settings.webhook_allow_private_targets = True
        assert r.status_code == 422
        assert r.json()["errors"] == [
            {"pointer": "#/body/url", "detail": "resolves to a private or reserved address (10.0.0.5)"}
        ]


class TestLifecycle:
    async def test_list_rotate_enable_delete(self, client: httpx.AsyncClient, db: DB) -> None:
        a = await webhook(client, OP, "http://127.0.0.1:9/a", FILED)
        b = await webhook(client, OP, "http://127.0.0.1:9/b", FILED)
        page = (await client.get("/v1/webhooks", params={"limit": 1}, headers=OP)).json()
        assert [w["id"] for w in page["items"]] == [a["id"]]
        page2 = (await client.get("/v1/webhooks", params={"cursor": page["next_cursor"]}, headers=OP)).json()
        assert [w["id"] for w in page2["items"]] == [b["id"]]
        assert page2["next_cursor"] is None

        rotated = (await client.post(f"/v1/webhooks/{a['id']}/rotate-secret", headers=OP)).json()
        assert rotated["secret"].startswith("whsec_")
        assert rotated["secret"] != a["secret"]
        sealed = await scalar(db, "SELECT previous_secret FROM subscriptions WHERE id = :i", i=a["id"])
        assert a["secret"] not in sealed  # sealed at rest (notify.webhooks.sealing)
        assert box_for(DEV_WEBHOOK_SECRET_KEY).open(sealed) == a["secret"]

        await db_disable(db, a["id"])
        enabled = (await client.post(f"/v1/webhooks/{a['id']}/enable", headers=OP)).json()
        assert (enabled["status"], enabled["disabled_reason"]) == ("active", None)

        assert (await client.delete(f"/v1/webhooks/{a['id']}", headers=OP)).status_code == 204
        assert (await client.get(f"/v1/webhooks/{a['id']}", headers=OP)).status_code == 404
        listed = (await client.get("/v1/webhooks", headers=OP)).json()["items"]
        assert [w["id"] for w in listed] == [b["id"]]

    async def test_event_types_catalogue(self, client: httpx.AsyncClient) -> None:
        body = (await client.get("/v1/webhooks/event-types", headers=OP)).json()
        by_type = {i["type"]: i for i in body["items"]}
        assert by_type[FILED] == {"type": FILED, "topic": "filing.declarations", "who_receives": "filer"}
        assert by_type["roomtax.distribution.run.posted.v1"]["who_receives"] == "agency"
        assert "roomtax.assessment.collection.posted.v1" not in by_type
        assert (body["signature_header"], body["tolerance_seconds"]) == ("Roomtax-Signature", 300)


async def db_disable(db: DB, subscription_id: str) -> None:
    from sqlalchemy import text

    async with db() as session, session.begin():
        await session.execute(
            text(
                "UPDATE subscriptions SET status = 'disabled', disabled_reason = 'x', disabled_at = now() "
                "WHERE id = :i"
            ),
            {"i": subscription_id},
        )
