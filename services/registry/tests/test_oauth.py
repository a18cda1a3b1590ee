from __future__ import annotations

from datetime import datetime

import httpx
from registry_factories import ADMIN, make_facilitator, make_lodging, make_operator
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker


async def _token(client: httpx.AsyncClient, cid: str, secret: str) -> httpx.Response:
    return await client.post(
        "/v1/oauth/token",
        data={"grant_type": "client_credentials", "client_id": cid, "client_secret": secret},
    )


class TestTokenEndpoint:
    async def test_bootstrap_admin_gets_a_token_that_works(self, client: httpx.AsyncClient) -> None:
        r = await _token(client, "agency-admin", "dev-admin-secret")
        assert r.status_code == 200
        body = r.json()
        assert body["token_type"] == "Bearer"
        assert body["expires_in"] == 900
        assert body["role"] == "agency-admin"
        listing = await client.get(
            "/v1/lodgings", headers={"Authorization": f"Bearer {body['access_token']}"}
        )
        assert listing.status_code == 200

    async def test_wrong_secret_and_grant_type(self, client: httpx.AsyncClient) -> None:
        assert (await _token(client, "agency-admin", "nope")).status_code == 401
        r = await client.post(
            "/v1/oauth/token", data={"grant_type": "password", "client_id": "a", "client_secret": "b"}
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/grant_type"

    async def test_http_basic_credentials(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=("agency-admin", "dev-admin-secret"),
        )
        assert r.status_code == 200


class TestClients:
    async def test_operator_client_sees_only_its_lodgings(self, client: httpx.AsyncClient) -> None:
        a, b = await make_operator(client, "A"), await make_operator(client, "B")
        la = await make_lodging(client, operator_id=a["id"], name="A Hotel")
        lb = await make_lodging(client, operator_id=b["id"], name="B Hotel")
        created = await client.post(
            "/v1/oauth-clients",
            json={"name": "A's PMS", "role": "operator", "operator_id": a["id"]},
            headers=ADMIN,
        )
        assert created.status_code == 201
        c = created.json()
        tok = (await _token(client, c["client_id"], c["client_secret"])).json()["access_token"]
        h = {"Authorization": f"Bearer {tok}"}
        assert (await client.get(f"/v1/lodgings/{la['id']}", headers=h)).status_code == 200
        assert (await client.get(f"/v1/lodgings/{lb['id']}", headers=h)).status_code == 404
        assert (await client.post("/v1/operators", json={"name": "x"}, headers=h)).status_code == 403

    async def test_rotate_invalidates_old_secret_and_revoke_blocks(self, client: httpx.AsyncClient) -> None:
        fac = await make_facilitator(client)
        c = (
            await client.post(
                "/v1/oauth-clients",
                json={"name": "OTA feed", "role": "facilitator", "facilitator_id": fac["id"]},
                headers=ADMIN,
            )
        ).json()
        rotated = (await client.post(f"/v1/oauth-clients/{c['client_id']}/rotate", headers=ADMIN)).json()
        assert rotated["client_secret"] != c["client_secret"]
        assert (await _token(client, c["client_id"], c["client_secret"])).status_code == 401
        assert (await _token(client, c["client_id"], rotated["client_secret"])).status_code == 200
        await client.post(f"/v1/oauth-clients/{c['client_id']}/revoke", headers=ADMIN)
        assert (await _token(client, c["client_id"], rotated["client_secret"])).status_code == 401
        again = await client.post(f"/v1/oauth-clients/{c['client_id']}/rotate", headers=ADMIN)
        assert again.status_code == 409

    async def test_binding_must_match_role(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/oauth-clients", json={"name": "x", "role": "operator"}, headers=ADMIN)
        assert r.status_code == 422
        assert "bound to operator_id" in r.json()["detail"]
        r = await client.post(
            "/v1/oauth-clients", json={"name": "y", "role": "operator", "operator_id": "nope"}, headers=ADMIN
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/operator_id"


class TestRevocation:
    async def test_revoking_a_client_records_it_and_publishes_it_in_one_transaction(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        fac = await make_facilitator(client)
        c = (
            await client.post(
                "/v1/oauth-clients",
                json={"name": "OTA to revoke", "role": "facilitator", "facilitator_id": fac["id"]},
                headers=ADMIN,
            )
        ).json()
        out = (await client.post(f"/v1/oauth-clients/{c['client_id']}/revoke", headers=ADMIN)).json()
        async with db() as session:
            row = (
                await session.execute(
                    text(
                        "SELECT kind, revoked_at, reason, event_id FROM revoked_principals "
                        "WHERE subject_id = :s"
                    ),
                    {"s": c["client_id"]},
                )
            ).one()
            event = (
                await session.execute(
                    text(
                        "SELECT event_id, topic, key, payload FROM outbox WHERE event_type = :t AND key = :k"
                    ),
                    {"t": "roomtax.registry.access.revoked.v1", "k": c["client_id"]},
                )
            ).one()
        assert row.kind == "client"
        assert row.revoked_at == datetime.fromisoformat(out["revoked_at"])
        assert row.reason == "client revoked by client:test-agency-admin-None"
        assert (row.event_id, event.topic) == (event.event_id, "registry.revocations")
        assert event.payload["data"] == {
            "kind": "client",
            "subject_id": c["client_id"],
            "revoked_at": out["revoked_at"].replace("+00:00", "Z"),
            "reason": "client revoked by client:test-agency-admin-None",
        }
