from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx
from fastapi import FastAPI
from registry_factories import ADMIN, make_facilitator, make_lodging, make_operator, outbox_types, scalar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from registry.bonds.handlers import on_bond_draw_requested
from servicekit.consumer import EventConsumer
from servicekit.testing import auth
from taxcore.events import CloudEvent

DB = async_sessionmaker[AsyncSession]
BOND = {
    "kind": "surety",
    "amount": "50000.00",
    "issuer": "Fianzas PR",
    "effective_on": "2026-01-01",
    "expires_on": "2026-12-31",
}


async def _lodging(client: httpx.AsyncClient, **kw: object) -> dict[str, object]:
    op = await make_operator(client)
    return await make_lodging(client, operator_id=op["id"], **kw)  # type: ignore[arg-type]


class TestBonds:
    async def test_post_bond_makes_lodging_compliant(self, client: httpx.AsyncClient, db: DB) -> None:
        lodging = await _lodging(client)
        url = f"/v1/lodgings/{lodging['id']}"
        before = (await client.get(f"{url}/compliance", params={"as_of": "2026-03-01"}, headers=ADMIN)).json()
        assert before["compliant"] is False
        assert before["reasons"] == ["no valid bond on this date (PR §27)"]
        r = await client.post(f"{url}/bonds", json=BOND, headers=ADMIN)
        assert r.status_code == 201, r.text
        assert r.json()["remaining"] == "50000.00"
        after = (await client.get(f"{url}/compliance", params={"as_of": "2026-03-01"}, headers=ADMIN)).json()
        assert after == {**after, "compliant": True, "valid_bond_id": r.json()["id"], "reasons": []}
        expired = (
            await client.get(f"{url}/compliance", params={"as_of": "2027-01-01"}, headers=ADMIN)
        ).json()
        assert expired["compliant"] is False
        assert "roomtax.registry.bond.posted.v1" in await outbox_types(db, str(lodging["tax_account"]))

    async def test_vi_lodging_needs_no_bond(self, client: httpx.AsyncClient) -> None:
        lodging = await _lodging(client, jurisdiction="VI", lodging_class="timeshare")
        c = (await client.get(f"/v1/lodgings/{lodging['id']}/compliance", headers=ADMIN)).json()
        assert c["bond_required"] is False
        assert c["compliant"] is True

    async def test_overlapping_bond_is_409_and_changes_nothing(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        lodging = await _lodging(client)
        url = f"/v1/lodgings/{lodging['id']}/bonds"
        assert (await client.post(url, json=BOND, headers=ADMIN)).status_code == 201
        r = await client.post(
            url, json={**BOND, "effective_on": "2026-06-01", "expires_on": "2027-05-31"}, headers=ADMIN
        )
        assert r.status_code == 409
        assert r.json()["errors"][0]["pointer"] == "#/body/effective_on"
        assert await scalar(db, "SELECT count(*) FROM bonds WHERE lodging_id = :l", l=lodging["id"]) == 1

    async def test_expiry_before_effective_is_422(self, client: httpx.AsyncClient) -> None:
        lodging = await _lodging(client)
        r = await client.post(
            f"/v1/lodgings/{lodging['id']}/bonds", json={**BOND, "expires_on": "2025-12-31"}, headers=ADMIN
        )
        assert r.status_code == 422
        assert "expires_on is before effective_on" in r.json()["detail"]

    async def test_unknown_kind_and_negative_amount_point_at_fields(self, client: httpx.AsyncClient) -> None:
        lodging = await _lodging(client)
        r = await client.post(
            f"/v1/lodgings/{lodging['id']}/bonds",
            json={**BOND, "kind": "promise", "amount": "-5"},
            headers=ADMIN,
        )
        assert r.status_code == 422
        assert {e["pointer"] for e in r.json()["errors"]} == {"#/body/kind", "#/body/amount"}

    async def test_draws_are_recorded_and_capped(self, client: httpx.AsyncClient) -> None:
        lodging = await _lodging(client)
        bond = (await client.post(f"/v1/lodgings/{lodging['id']}/bonds", json=BOND, headers=ADMIN)).json()
        url = f"/v1/lodgings/{lodging['id']}/bonds/{bond['id']}/draws"
        d = await client.post(
            url,
            json={"amount": "12000.50", "drawn_on": "2026-05-01", "reason": "unpaid April deficiency"},
            headers=ADMIN,
        )
        assert d.status_code == 201
        too_much = await client.post(
            url, json={"amount": "38000.00", "drawn_on": "2026-05-02", "reason": "x"}, headers=ADMIN
        )
        assert too_much.status_code == 422
        assert "37999.50" in too_much.json()["detail"]
        bonds = (await client.get(f"/v1/lodgings/{lodging['id']}/bonds", headers=ADMIN)).json()
        assert bonds[0]["drawn"] == "12000.50"
        assert bonds[0]["remaining"] == "37999.50"


class TestBondDrawConsumer:
    async def test_requested_draw_is_recorded_once(
        self, client: httpx.AsyncClient, db: DB, service_app: FastAPI
    ) -> None:
        lodging = await _lodging(client)
        await client.post(f"/v1/lodgings/{lodging['id']}/bonds", json=BOND, headers=ADMIN)
        event = CloudEvent(
            id=str(uuid.uuid4()),
            source="/roomtax/assessment",
            type="roomtax.assessment.bond.draw.requested.v1",
            subject=str(lodging["tax_account"]),
            time=datetime.now(UTC),
            data={
                "notice_id": "N-1",
                "tax_account": lodging["tax_account"],
                "period": "2026-03",
                "amount": "60000.00",
                "requested_on": "2026-06-15",
                "reason": "notice lapsed unpaid",
            },
        )
        consumer = EventConsumer(
            name="registry-bond-draws", bootstrap="unused:0", topics=[], sessionmaker=db, handlers={}
        )
        assert await consumer.apply(event, on_bond_draw_requested) == "applied"
        assert await consumer.apply(event, on_bond_draw_requested) == "duplicate"
        bonds = (await client.get(f"/v1/lodgings/{lodging['id']}/bonds", headers=ADMIN)).json()
        assert [d["amount"] for d in bonds[0]["draws"]] == ["50000.00"]  # capped at the bond
        assert bonds[0]["remaining"] == "0.00"


class TestAuthorizations:
    async def test_facilitator_cannot_authorize_itself(self, client: httpx.AsyncClient, db: DB) -> None:
        op = await make_operator(client)
        lodging = await make_lodging(client, operator_id=op["id"])
        own_ota = await make_facilitator(client, "Own Channel", operator_id=op["id"])
        r = await client.post(
            f"/v1/lodgings/{lodging['id']}/authorizations",
            json={"facilitator_id": own_ota["id"], "starts_on": "2026-02-01"},
            headers=ADMIN,
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/facilitator_id"
        assert (
            await scalar(db, "SELECT count(*) FROM authorizations WHERE lodging_id = :l", l=lodging["id"])
            == 0
        )

    async def test_end_before_start_is_422(self, client: httpx.AsyncClient) -> None:
        lodging = await _lodging(client)
        fac = await make_facilitator(client)
        r = await client.post(
            f"/v1/lodgings/{lodging['id']}/authorizations",
            json={"facilitator_id": fac["id"], "starts_on": "2026-05-01", "ends_on": "2026-04-30"},
            headers=ADMIN,
        )
        assert r.status_code == 422
        assert "ends_on is before starts_on" in r.json()["detail"]

    async def test_overlap_then_end_then_regrant(self, client: httpx.AsyncClient, db: DB) -> None:
        lodging = await _lodging(client)
        fac = await make_facilitator(client)
        url = f"/v1/lodgings/{lodging['id']}/authorizations"
        first = (
            await client.post(
                url, json={"facilitator_id": fac["id"], "starts_on": "2026-02-01"}, headers=ADMIN
            )
        ).json()
        clash = await client.post(
            url, json={"facilitator_id": fac["id"], "starts_on": "2026-06-01"}, headers=ADMIN
        )
        assert clash.status_code == 409
        ended = await client.post(f"{url}/{first['id']}/end", json={"ends_on": "2026-05-31"}, headers=ADMIN)
        assert ended.json()["ends_on"] == "2026-05-31"
        again = await client.post(
            url, json={"facilitator_id": fac["id"], "starts_on": "2026-06-01"}, headers=ADMIN
        )
        assert again.status_code == 201
        types = await outbox_types(db, str(lodging["tax_account"]))
        assert types[-3:] == [
            "roomtax.registry.authorization.granted.v1",
            "roomtax.registry.authorization.ended.v1",
            "roomtax.registry.authorization.granted.v1",
        ]

    async def test_facilitator_sees_only_its_own_authorizations(self, client: httpx.AsyncClient) -> None:
        lodging = await _lodging(client)
        f1, f2 = await make_facilitator(client, "F1"), await make_facilitator(client, "F2")
        url = f"/v1/lodgings/{lodging['id']}/authorizations"
        for f in (f1, f2):
            await client.post(url, json={"facilitator_id": f["id"], "starts_on": "2026-02-01"}, headers=ADMIN)
        seen = (await client.get(url, headers=auth("facilitator", facilitator_id=f1["id"]))).json()
        assert [a["facilitator_id"] for a in seen] == [f1["id"]]


class TestCertificates:
    async def test_issue_and_refuse_duplicates_and_vi(self, client: httpx.AsyncClient) -> None:
        pr = await _lodging(client)
        body = {
            "certificate_number": f"PRFILM-{uuid.uuid4().hex[:6]}",
            "production": "Feature",
            "valid_from": "2026-03-01",
            "valid_to": "2026-05-31",
        }
        url = f"/v1/lodgings/{pr['id']}/certificates"
        assert (await client.post(url, json=body, headers=ADMIN)).status_code == 201
        assert (await client.post(url, json=body, headers=ADMIN)).status_code == 409
        vi = await _lodging(client, jurisdiction="VI", lodging_class="hotel")
        r = await client.post(
            f"/v1/lodgings/{vi['id']}/certificates", json={**body, "certificate_number": "X-1"}, headers=ADMIN
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/kind"
        backwards = await client.post(
            url, json={**body, "certificate_number": "X-2", "valid_to": "2026-01-01"}, headers=ADMIN
        )
        assert backwards.status_code == 422
