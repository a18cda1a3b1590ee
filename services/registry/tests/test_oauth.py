from __future__ import annotations

import httpx
from registry_factories import ADMIN, make_facilitator, make_lodging, make_operator


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
