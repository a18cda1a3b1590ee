from __future__ import annotations

from typing import Any

import httpx
from registry_factories import ADMIN, make_facilitator, make_lodging, make_operator, outbox_types, scalar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from registry.accounts import format_account, is_valid_account, luhn_digit
from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]


class TestAccountNumbers:
    def test_format_and_check_digit(self) -> None:
        assert luhn_digit("7992739871") == 3  # the textbook Luhn example
        assert format_account("PR", 1) == "PR-0000001-8"
        assert format_account("VI", 42) == "VI-0000042-2"
        assert is_valid_account("PR-0000001-8")
        assert not is_valid_account("PR-0000001-7")
        assert not is_valid_account("PR-000001-8")


class TestRegisterLodging:
    async def test_registers_with_account_number_status_and_event(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        op = await make_operator(client)
        lodging = await make_lodging(client, operator_id=op["id"], casino=True)
        assert lodging["tax_account"].startswith("PR-")
        assert is_valid_account(lodging["tax_account"])
        assert lodging["status"] == "active"
        assert lodging["statuses"] == [
            {"status": "active", "effective_from": "2026-01-01", "reason": "registration"}
        ]
        second = await make_lodging(client, operator_id=op["id"], name="Second")
        assert int(second["tax_account"][3:10]) == int(lodging["tax_account"][3:10]) + 1
        types = await outbox_types(db, lodging["tax_account"])
        assert types == ["roomtax.registry.lodging.registered.v1"]

    async def test_the_documents_language_and_mailing_address_travel_in_the_snapshot(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        op = await make_operator(client)
        default = await make_lodging(client, operator_id=op["id"])
        assert default["preferred_language"] is None  # the jurisdiction's default (PR: Spanish)
        body = {
            "jurisdiction": "VI",
            "lodging_class": "hotel",
            "name": "Bolongo Bay",
            "address": {"line1": "7150 Bolongo", "municipality": "St. Thomas", "postal_code": "00802"},
            "room_count": 65,
            "operator_id": op["id"],
            "registered_on": "2026-01-01",
            "preferred_language": "es",
        }
        r = await client.post("/v1/lodgings", json=body, headers=ADMIN)
        assert r.status_code == 201, r.text
        account = r.json()["tax_account"]
        assert r.json()["preferred_language"] == "es"
        data = await scalar(
            db, "SELECT payload->'data' FROM outbox WHERE key = :k ORDER BY id DESC LIMIT 1", k=account
        )
        assert (data["preferred_language"], data["address"]) == (
            "es",
            {"line1": "7150 Bolongo", "line2": None, "municipality": "St. Thomas", "postal_code": "00802"},
        )
        bad = await client.post("/v1/lodgings", json={**body, "preferred_language": "fr"}, headers=ADMIN)
        assert bad.status_code == 422
        assert bad.json()["errors"][0]["pointer"] == "#/body/preferred_language"
        changed = await client.patch(
            f"/v1/lodgings/{r.json()['id']}", json={"preferred_language": "en"}, headers=ADMIN
        )
        assert changed.status_code == 200, changed.text
        assert changed.json()["preferred_language"] == "en"

    async def test_unknown_class_for_jurisdiction_is_422_naming_field_and_changes_nothing(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        op = await make_operator(client)
        before = await _count(db, "lodgings")
        events_before = await _count(db, "outbox")
        r = await client.post(
            "/v1/lodgings",
            json={
                "jurisdiction": "VI",
                "lodging_class": "motel",
                "name": "X",
                "address": {"line1": "1 Main", "municipality": "St. Thomas"},
                "room_count": 3,
                "operator_id": op["id"],
                "registered_on": "2026-01-01",
            },
            headers=ADMIN,
        )
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["errors"][0]["pointer"] == "#/body/lodging_class"
        assert "motel" in body["detail"]
        assert await _count(db, "lodgings") == before
        assert await _count(db, "outbox") == events_before

    async def test_negative_room_count_points_at_field(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/lodgings", json={"room_count": -1}, headers=ADMIN)
        assert r.status_code == 422
        pointers = {e["pointer"] for e in r.json()["errors"]}
        assert "#/body/room_count" in pointers
        assert "#/body/jurisdiction" in pointers

    async def test_operator_token_cannot_register(self, client: httpx.AsyncClient) -> None:
        op = await make_operator(client)
        r = await client.post("/v1/lodgings", json={}, headers=auth("operator", operator_id=op["id"]))
        assert r.status_code in (403, 422)

    async def test_no_token_is_401_problem(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/v1/lodgings")
        assert r.status_code == 401
        assert r.json()["type"].endswith("/unauthorized")


class TestLodgingVisibility:
    async def test_operator_a_cannot_read_operator_b_lodging(self, client: httpx.AsyncClient) -> None:
        a = await make_operator(client, "A Hotels")
        b = await make_operator(client, "B Hotels")
        lodging_b = await make_lodging(client, operator_id=b["id"], name="B Inn", lodging_class="inn")
        as_a = auth("operator", operator_id=a["id"])
        r = await client.get(f"/v1/lodgings/{lodging_b['id']}", headers=as_a)
        assert r.status_code == 404
        assert r.json()["status"] == 404
        r = await client.get(f"/v1/lodgings/{lodging_b['tax_account']}", headers=as_a)
        assert r.status_code == 404
        listing = await client.get("/v1/lodgings", headers=as_a)
        assert listing.json()["items"] == []
        as_b = auth("operator", operator_id=b["id"])
        assert (await client.get(f"/v1/lodgings/{lodging_b['id']}", headers=as_b)).status_code == 200

    async def test_facilitator_sees_only_authorizing_lodgings(self, client: httpx.AsyncClient) -> None:
        op = await make_operator(client)
        fac = await make_facilitator(client)
        mine = await make_lodging(client, operator_id=op["id"], name="Authorizes")
        other = await make_lodging(client, operator_id=op["id"], name="Does not")
        r = await client.post(
            f"/v1/lodgings/{mine['id']}/authorizations",
            json={"facilitator_id": fac["id"], "starts_on": "2026-02-01"},
            headers=ADMIN,
        )
        assert r.status_code == 201, r.text
        as_fac = auth("facilitator", facilitator_id=fac["id"])
        listing = (await client.get("/v1/lodgings", headers=as_fac)).json()
        assert [x["id"] for x in listing["items"]] == [mine["id"]]
        assert (await client.get(f"/v1/lodgings/{other['id']}", headers=as_fac)).status_code == 404

    async def test_pagination_walks_every_lodging_once(self, client: httpx.AsyncClient) -> None:
        op = await make_operator(client)
        created = [await make_lodging(client, operator_id=op["id"], name=f"L{i}") for i in range(5)]
        seen: list[str] = []
        cursor = None
        while True:
            params = {"limit": 2, "operator_id": op["id"], **({"cursor": cursor} if cursor else {})}
            page = (await client.get("/v1/lodgings", params=params, headers=ADMIN)).json()
            seen += [x["tax_account"] for x in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        assert seen == sorted(x["tax_account"] for x in created)
        bad = await client.get("/v1/lodgings", params={"cursor": "garbage!"}, headers=ADMIN)
        assert bad.status_code == 422
        assert bad.json()["errors"][0]["pointer"] == "#/query/cursor"


class TestStatus:
    async def test_status_history_is_effective_dated(self, client: httpx.AsyncClient) -> None:
        op = await make_operator(client)
        lodging = await make_lodging(client, operator_id=op["id"])
        r = await client.post(
            f"/v1/lodgings/{lodging['id']}/status",
            json={"status": "closed", "effective_from": "2026-06-30", "reason": "sold"},
            headers=ADMIN,
        )
        assert r.status_code == 200, r.text
        assert [s["status"] for s in r.json()["statuses"]] == ["active", "closed"]
        r = await client.post(
            f"/v1/lodgings/{lodging['id']}/status",
            json={"status": "active", "effective_from": "2026-03-01"},
            headers=ADMIN,
        )
        assert r.status_code == 409
        assert r.json()["errors"][0]["pointer"] == "#/body/effective_from"


async def _count(db: DB, table: str) -> int:
    return int(await scalar(db, f"SELECT count(*) FROM {table}"))


class TestIdempotentRegistration:
    async def test_same_key_registers_once(self, client: httpx.AsyncClient, db: DB) -> None:
        op = await make_operator(client)
        body = {
            "jurisdiction": "PR",
            "lodging_class": "inn",
            "name": "Posada",
            "room_count": 9,
            "address": {"line1": "1 Calle Sol", "municipality": "Ponce"},
            "operator_id": op["id"],
            "registered_on": "2026-02-01",
        }
        headers = {**ADMIN, "Idempotency-Key": "pms-batch-77-row-1"}
        first = await client.post("/v1/lodgings", json=body, headers=headers)
        second = await client.post("/v1/lodgings", json=body, headers=headers)
        assert first.status_code == second.status_code == 201
        assert first.json()["tax_account"] == second.json()["tax_account"]
        assert await scalar(db, "SELECT count(*) FROM lodgings WHERE name = 'Posada'") == 1
        other = await client.post("/v1/lodgings", json={**body, "room_count": 10}, headers=headers)
        assert other.status_code == 422


class TestSearchLodgings:
    async def test_name_account_or_municipality_in_any_case_and_only_what_the_caller_sees(
        self, client: httpx.AsyncClient
    ) -> None:
        mine = await make_operator(client, "Operadora Zafiro")
        theirs = await make_operator(client, "Otra")
        a = await make_lodging(client, operator_id=mine["id"], name="Posada Zafiro 100%")
        b = await make_lodging(client, operator_id=mine["id"], name="Hotel Ámbar")
        c = await make_lodging(client, operator_id=theirs["id"], name="Zafiro Ajeno")
        ours = {a["id"], b["id"], c["id"]}

        async def found(q: str, headers: dict[str, str] = ADMIN) -> set[str]:
            r = await client.get("/v1/lodgings", params={"q": q, "limit": 500}, headers=headers)
            assert r.status_code == 200, r.text
            return {x["id"] for x in r.json()["items"]} & ours

        assert await found("zafiro") == {a["id"], c["id"]}
        assert await found("ÁMBAR") == {b["id"]}
        assert await found(b["tax_account"]) == {b["id"]}
        assert await found("san juan") == ours
        assert await found("100%") == {a["id"]}
        assert await found("0_%") == set()  # % and _ are literal text, not wildcards
        operator = auth("operator", operator_id=mine["id"])
        assert await found("zafiro", operator) == {a["id"]}  # another operator's lodging stays out
        r = await client.get("/v1/lodgings", params={"q": ""}, headers=ADMIN)
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/query/q"

    async def test_by_tax_accounts_in_one_call_and_only_what_the_caller_sees(
        self, client: httpx.AsyncClient
    ) -> None:
        mine = await make_operator(client, "Operadora Coral")
        theirs = await make_operator(client, "Otra Coral")
        a = await make_lodging(client, operator_id=mine["id"], name="Coral Uno")
        b = await make_lodging(client, operator_id=mine["id"], name="Coral Dos")
        c = await make_lodging(client, operator_id=theirs["id"], name="Coral Ajeno")
        asked = [c["tax_account"], a["tax_account"], "PR-0000000000", b["tax_account"]]

        async def names(headers: dict[str, str]) -> list[str]:
            r = await client.get("/v1/lodgings", params={"tax_account": asked, "limit": 500}, headers=headers)
            assert r.status_code == 200, r.text
            return [x["name"] for x in r.json()["items"]]

        def named(*lodgings: dict[str, Any]) -> list[str]:  # in tax account order, as listed
            return [x["name"] for x in sorted(lodgings, key=lambda x: x["tax_account"])]

        assert await names(ADMIN) == named(a, b, c)  # the unknown account is simply not there
        assert await names(auth("operator", operator_id=mine["id"])) == named(a, b)
        too_many = await client.get("/v1/lodgings", params={"tax_account": ["x"] * 501}, headers=ADMIN)
        assert too_many.status_code == 422, too_many.text
        assert too_many.json()["errors"][0]["pointer"] == "#/query/tax_account"
