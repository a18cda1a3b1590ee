"""Tenant isolation: a caller never sees or changes another's data (404, never a leak).

Every route of the registry, for each role: operator A against operator B's lodging,
a facilitator against a lodging that never authorized it, read-only agency roles
against every write, and ids of B's objects passed under A's paths.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from registry_factories import ADMIN, make_facilitator, make_lodging, make_operator

from servicekit.testing import auth

AUDITOR = auth("agency-auditor")
DASHBOARD = auth("dashboard")
BOND = {
    "kind": "surety",
    "amount": "50000.00",
    "issuer": "Fianzas PR",
    "effective_on": "2026-01-01",
    "expires_on": "2026-12-31",
}


@dataclass
class World:
    """Operator A with a lodging that authorized facilitator F; operator B with a lodging,
    a bond (drawn on), a certificate and an authorization of facilitator G."""

    op_a: dict[str, Any]
    op_b: dict[str, Any]
    lodging_a: dict[str, Any]
    lodging_b: dict[str, Any]
    fac_f: dict[str, Any]
    fac_g: dict[str, Any]
    bond_a: dict[str, Any]
    bond_b: dict[str, Any]
    auth_a: dict[str, Any]
    auth_b: dict[str, Any]

    @property
    def as_a(self) -> dict[str, str]:
        return auth("operator", operator_id=self.op_a["id"])

    @property
    def as_b(self) -> dict[str, str]:
        return auth("operator", operator_id=self.op_b["id"])

    @property
    def as_f(self) -> dict[str, str]:
        return auth("facilitator", facilitator_id=self.fac_f["id"])

    @property
    def as_g(self) -> dict[str, str]:
        return auth("facilitator", facilitator_id=self.fac_g["id"])


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(url, json=body, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def world(client: httpx.AsyncClient) -> World:
    op_a, op_b = await make_operator(client, "A Hotels"), await make_operator(client, "B Hotels")
    lodging_a = await make_lodging(client, operator_id=op_a["id"], name="A Inn")
    lodging_b = await make_lodging(client, operator_id=op_b["id"], name="B Inn")
    fac_f, fac_g = await make_facilitator(client, "F Travel"), await make_facilitator(client, "G Travel")
    a, b = f"/v1/lodgings/{lodging_a['id']}", f"/v1/lodgings/{lodging_b['id']}"
    auth_a = await _post(
        client, f"{a}/authorizations", {"facilitator_id": fac_f["id"], "starts_on": "2026-02-01"}
    )
    auth_b = await _post(
        client, f"{b}/authorizations", {"facilitator_id": fac_g["id"], "starts_on": "2026-02-01"}
    )
    bond_a = await _post(client, f"{a}/bonds", BOND)
    bond_b = await _post(client, f"{b}/bonds", BOND)
    await _post(
        client,
        f"{b}/bonds/{bond_b['id']}/draws",
        {"amount": "1234.56", "drawn_on": "2026-05-01", "reason": "B's unpaid April deficiency"},
    )
    await _post(
        client,
        f"{b}/certificates",
        {
            "certificate_number": f"PRFILM-{uuid.uuid4().hex[:6]}",
            "production": "B's film",
            "valid_from": "2026-03-01",
            "valid_to": "2026-05-31",
        },
    )
    return World(op_a, op_b, lodging_a, lodging_b, fac_f, fac_g, bond_a, bond_b, auth_a, auth_b)


def lodging_reads(w: World, lodging: dict[str, Any]) -> list[str]:
    """Every GET under one lodging, by id and by tax account number."""
    urls = []
    for ref in (lodging["id"], lodging["tax_account"]):
        base = f"/v1/lodgings/{ref}"
        urls += [
            base,
            f"{base}/compliance",
            f"{base}/authorizations",
            f"{base}/bonds",
            f"{base}/certificates",
        ]
    return urls


def lodging_writes(
    w: World, lodging: dict[str, Any], bond: dict[str, Any], grant: dict[str, Any]
) -> list[tuple[str, str, dict[str, Any]]]:
    """Every write under one lodging, each with a valid body."""
    base = f"/v1/lodgings/{lodging['id']}"
    return [
        ("PATCH", base, {"name": "Renamed"}),
        ("POST", f"{base}/status", {"status": "suspended", "effective_from": "2026-07-01"}),
        ("POST", f"{base}/attributes", {"effective_from": "2026-07-01", "lodging_class": "inn"}),
        ("POST", f"{base}/authorizations", {"facilitator_id": w.fac_g["id"], "starts_on": "2026-03-01"}),
        ("POST", f"{base}/authorizations/{grant['id']}/end", {"ends_on": "2026-06-30"}),
        ("POST", f"{base}/bonds", {**BOND, "effective_on": "2027-01-01", "expires_on": "2027-12-31"}),
        ("POST", f"{base}/bonds/{bond['id']}/status", {"status": "released"}),
        (
            "POST",
            f"{base}/bonds/{bond['id']}/draws",
            {"amount": "1.00", "drawn_on": "2026-05-02", "reason": "x"},
        ),
        (
            "POST",
            f"{base}/certificates",
            {
                "certificate_number": f"PRFILM-{uuid.uuid4().hex[:6]}",
                "production": "Other",
                "valid_from": "2026-03-01",
                "valid_to": "2026-05-31",
            },
        ),
    ]


def agency_writes(w: World) -> list[tuple[str, str, dict[str, Any]]]:
    """Writes that are not under a lodging: only the agency administrator makes them."""
    return [
        ("POST", "/v1/operators", {"name": "Intruder", "email": "x@example.pr"}),
        ("POST", "/v1/facilitators", {"name": "Intruder OTA"}),
        (
            "POST",
            "/v1/lodgings",
            {
                "jurisdiction": "PR",
                "lodging_class": "hotel",
                "name": "Intruder Inn",
                "address": {"line1": "1 Calle", "municipality": "San Juan"},
                "room_count": 5,
                "operator_id": w.op_a["id"],
                "registered_on": "2026-01-01",
            },
        ),
        ("POST", "/v1/oauth-clients", {"name": f"intruder-{uuid.uuid4().hex[:6]}", "role": "agency-admin"}),
        ("POST", "/v1/oauth-clients/agency-admin/rotate", {}),
        ("POST", "/v1/oauth-clients/agency-admin/revoke", {}),
    ]


async def send(
    client: httpx.AsyncClient, method: str, url: str, body: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    return await client.request(method, url, json=body, headers=headers)


class TestOperatorIsolation:
    async def test_operator_a_cannot_read_b_lodging_or_anything_under_it(
        self, client: httpx.AsyncClient
    ) -> None:
        w = await world(client)
        for url in lodging_reads(w, w.lodging_b):
            r = await client.get(url, headers=w.as_a)
            assert r.status_code == 404, (url, r.text)
            assert w.lodging_b["name"] not in r.text
        for url in lodging_reads(w, w.lodging_a):
            assert (await client.get(url, headers=w.as_a)).status_code == 200, url

    async def test_operator_lists_never_include_b(self, client: httpx.AsyncClient) -> None:
        w = await world(client)
        mine = (await client.get("/v1/lodgings", headers=w.as_a)).json()
        assert [x["id"] for x in mine["items"]] == [w.lodging_a["id"]]
        for params in ({"operator_id": w.op_b["id"]}, {"jurisdiction": "PR", "operator_id": w.op_b["id"]}):
            r = await client.get("/v1/lodgings", params=params, headers=w.as_a)
            assert r.json()["items"] == [], params
        ops = (await client.get("/v1/operators", headers=w.as_a)).json()
        assert [o["id"] for o in ops["items"]] == [w.op_a["id"]]
        assert (await client.get("/v1/facilitators", headers=w.as_a)).json()["items"] == []

    async def test_operator_cannot_read_another_operator_or_facilitator(
        self, client: httpx.AsyncClient
    ) -> None:
        w = await world(client)
        assert (await client.get(f"/v1/operators/{w.op_b['id']}", headers=w.as_a)).status_code == 404
        assert (await client.get(f"/v1/operators/{w.op_a['id']}", headers=w.as_a)).status_code == 200
        assert (await client.get(f"/v1/facilitators/{w.fac_f['id']}", headers=w.as_a)).status_code == 404

    async def test_operator_a_cannot_change_b_lodging_and_cannot_change_its_own(
        self, client: httpx.AsyncClient
    ) -> None:
        w = await world(client)
        for method, url, body in lodging_writes(w, w.lodging_b, w.bond_b, w.auth_b):
            assert (await send(client, method, url, body, w.as_a)).status_code == 404, url
        for method, url, body in lodging_writes(w, w.lodging_a, w.bond_a, w.auth_a):
            assert (await send(client, method, url, body, w.as_a)).status_code == 403, url
        after = (await client.get(f"/v1/lodgings/{w.lodging_b['id']}", headers=ADMIN)).json()
        assert (after["name"], [s["status"] for s in after["statuses"]]) == ("B Inn", ["active"])

    async def test_b_sub_resource_ids_under_a_path_are_404_even_for_the_agency(
        self, client: httpx.AsyncClient
    ) -> None:
        w = await world(client)
        a = f"/v1/lodgings/{w.lodging_a['id']}"
        for url, body in (
            (f"{a}/bonds/{w.bond_b['id']}/status", {"status": "released"}),
            (
                f"{a}/bonds/{w.bond_b['id']}/draws",
                {"amount": "1.00", "drawn_on": "2026-05-02", "reason": "x"},
            ),
            (f"{a}/authorizations/{w.auth_b['id']}/end", {"ends_on": "2026-06-30"}),
        ):
            r = await client.post(url, json=body, headers=ADMIN)
            assert r.status_code == 404, (url, r.text)
        bonds_b = (await client.get(f"/v1/lodgings/{w.lodging_b['id']}/bonds", headers=ADMIN)).json()
        assert (bonds_b[0]["status"], bonds_b[0]["drawn"]) == ("active", "1234.56")


class TestFacilitatorIsolation:
    async def test_unauthorized_facilitator_sees_nothing_of_b(self, client: httpx.AsyncClient) -> None:
        w = await world(client)
        for url in lodging_reads(w, w.lodging_b):
            assert (await client.get(url, headers=w.as_f)).status_code == 404, url
        listing = (await client.get("/v1/lodgings", headers=w.as_f)).json()
        assert [x["id"] for x in listing["items"]] == [w.lodging_a["id"]]
        r = await client.get("/v1/lodgings", params={"operator_id": w.op_b["id"]}, headers=w.as_f)
        assert r.json()["items"] == []
        for method, url, body in lodging_writes(w, w.lodging_b, w.bond_b, w.auth_b):
            assert (await send(client, method, url, body, w.as_f)).status_code == 404, url

    async def test_authorized_facilitator_sees_the_lodging_but_changes_nothing(
        self, client: httpx.AsyncClient
    ) -> None:
        w = await world(client)
        base = f"/v1/lodgings/{w.lodging_a['id']}"
        assert (await client.get(base, headers=w.as_f)).status_code == 200
        assert (await client.get(f"{base}/certificates", headers=w.as_f)).status_code == 200
        seen = (await client.get(f"{base}/authorizations", headers=w.as_f)).json()
        assert [x["facilitator_id"] for x in seen] == [w.fac_f["id"]]
        for method, url, body in lodging_writes(w, w.lodging_a, w.bond_a, w.auth_a):
            assert (await send(client, method, url, body, w.as_f)).status_code == 403, url

    async def test_facilitator_does_not_see_the_operators_bonds(self, client: httpx.AsyncClient) -> None:
        """Bond draws show the operator's unpaid deficiencies; the assessment service keeps
        an account's deficiencies from facilitators, so the registry does too."""
        w = await world(client)
        g_on_b = await client.get(f"/v1/lodgings/{w.lodging_b['id']}/bonds", headers=w.as_g)
        assert g_on_b.status_code == 404
        assert "1234.56" not in g_on_b.text
        assert (
            await client.get(f"/v1/lodgings/{w.lodging_b['id']}/bonds", headers=w.as_b)
        ).status_code == 200

    async def test_facilitator_reads_only_itself(self, client: httpx.AsyncClient) -> None:
        w = await world(client)
        assert (await client.get(f"/v1/facilitators/{w.fac_g['id']}", headers=w.as_f)).status_code == 404
        assert (await client.get(f"/v1/facilitators/{w.fac_f['id']}", headers=w.as_f)).status_code == 200
        assert [f["id"] for f in (await client.get("/v1/facilitators", headers=w.as_f)).json()["items"]] == [
            w.fac_f["id"]
        ]
        assert (await client.get("/v1/operators", headers=w.as_f)).json()["items"] == []
        assert (await client.get(f"/v1/operators/{w.op_a['id']}", headers=w.as_f)).status_code == 404


class TestReadOnlyAndAgencyOnlyRoutes:
    async def test_auditor_and_dashboard_read_all_and_write_nothing(self, client: httpx.AsyncClient) -> None:
        w = await world(client)
        for headers in (AUDITOR, DASHBOARD):
            for url in lodging_reads(w, w.lodging_b):
                assert (await client.get(url, headers=headers)).status_code == 200, url
            for method, url, body in [
                *lodging_writes(w, w.lodging_b, w.bond_b, w.auth_b),
                *agency_writes(w),
            ]:
                r = await send(client, method, url, body, headers)
                assert r.status_code == 403, (method, url, r.text)
            assert (await client.get("/v1/oauth-clients", headers=headers)).status_code == 403
        after = (await client.get(f"/v1/lodgings/{w.lodging_b['id']}", headers=ADMIN)).json()
        assert after["name"] == "B Inn"

    async def test_operator_and_facilitator_get_403_on_agency_only_routes(
        self, client: httpx.AsyncClient
    ) -> None:
        w = await world(client)
        for headers in (w.as_a, w.as_f):
            for method, url, body in agency_writes(w):
                r = await send(client, method, url, body, headers)
                assert r.status_code == 403, (method, url, r.text)
            assert (await client.get("/v1/oauth-clients", headers=headers)).status_code == 403


class TestTokenIdempotency:
    async def test_an_access_token_is_never_replayed_to_another_caller(
        self, client: httpx.AsyncClient
    ) -> None:
        """A token request with HTTP Basic credentials has no Bearer token, so the chassis
        scopes its Idempotency-Key as "anonymous": a replay would hand the token to
        anyone who sends the same key without credentials."""
        key = {"Idempotency-Key": "token-once"}
        first = await client.post(
            "/v1/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=("agency-admin", "dev-admin-secret"),
            headers=key,
        )
        assert first.status_code == 422
        assert first.json()["errors"][0]["pointer"] == "#/header/Idempotency-Key"
        thief = await client.post("/v1/oauth/token", data={"grant_type": "client_credentials"}, headers=key)
        assert thief.status_code == 422
        assert "access_token" not in thief.text
        no_key = await client.post(
            "/v1/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=("agency-admin", "dev-admin-secret"),
        )
        assert no_key.status_code == 200
