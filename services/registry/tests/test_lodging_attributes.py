"""Effective-dated class and casino licence (PR §2(16), §24(B)): append-only, published, migrated."""

from __future__ import annotations

import asyncio
import uuid
from datetime import date
from pathlib import Path

import asyncpg
import httpx
from registry_factories import ADMIN, make_lodging, make_operator, outbox_types
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.migrations import upgrade
from servicekit.testing import auth, database_url
from servicekit.testing import test_database_name as db_name

DB = async_sessionmaker[AsyncSession]
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


async def _payloads(db: DB, key: str) -> list[dict[str, object]]:
    async with db() as session:
        rows = await session.execute(
            text("SELECT payload FROM outbox WHERE key = :k ORDER BY id"), {"k": key}
        )
        return [r[0]["data"] for r in rows]


class TestChangeAttributes:
    async def test_a_casino_licence_from_a_period_start_is_history_and_an_event(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        op = await make_operator(client)
        hotel = await make_lodging(client, operator_id=op["id"])
        assert hotel["attributes"] == [
            {
                "effective_from": "2026-01-01",
                "lodging_class": "hotel",
                "casino": False,
                "reason": "registration",
            }
        ]
        r = await client.post(
            f"/v1/lodgings/{hotel['id']}/attributes",
            json={"effective_from": "2026-11-01", "casino": True, "reason": "gaming licence G-2026-4"},
            headers=ADMIN,
        )
        assert r.status_code == 200, r.text
        out = r.json()
        assert (out["lodging_class"], out["casino"]) == ("hotel", True)
        assert out["attributes"] == [
            {
                "effective_from": "2026-01-01",
                "lodging_class": "hotel",
                "casino": False,
                "reason": "registration",
            },
            {
                "effective_from": "2026-11-01",
                "lodging_class": "hotel",
                "casino": True,
                "reason": "gaming licence G-2026-4",
            },
        ]
        assert await outbox_types(db, hotel["tax_account"]) == [
            "roomtax.registry.lodging.registered.v1",
            "roomtax.registry.lodging.attributes_changed.v1",
        ]
        registered, changed = await _payloads(db, hotel["tax_account"])
        assert registered["attributes"] == [
            {"effective_from": "2026-01-01", "lodging_class": "hotel", "casino": False}
        ]
        assert changed["attributes"] == [
            {"effective_from": "2026-01-01", "lodging_class": "hotel", "casino": False},
            {"effective_from": "2026-11-01", "lodging_class": "hotel", "casino": True},
        ]
        recorded_by = await _scalar(
            db, "SELECT recorded_by FROM lodging_attributes WHERE casino AND lodging_id = :i", i=hotel["id"]
        )
        assert str(recorded_by).startswith("client:")

    async def test_history_is_append_only_and_from_a_period_start(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        op = await make_operator(client)
        hotel = await make_lodging(client, operator_id=op["id"])
        url = f"/v1/lodgings/{hotel['id']}/attributes"
        mid_month = await client.post(
            url, json={"effective_from": "2026-11-15", "casino": True}, headers=ADMIN
        )
        assert mid_month.status_code == 422
        assert [e["pointer"] for e in mid_month.json()["errors"]] == ["#/body/effective_from"]
        nothing = await client.post(url, json={"effective_from": "2026-11-01"}, headers=ADMIN)
        assert nothing.status_code == 422
        unchanged = await client.post(
            url, json={"effective_from": "2026-11-01", "casino": False}, headers=ADMIN
        )
        assert unchanged.status_code == 409
        bad_class = await client.post(
            url, json={"effective_from": "2026-11-01", "lodging_class": "castle"}, headers=ADMIN
        )
        assert [e["pointer"] for e in bad_class.json()["errors"]] == ["#/body/lodging_class"]
        ok = await client.post(
            url, json={"effective_from": "2026-11-01", "lodging_class": "inn"}, headers=ADMIN
        )
        assert ok.status_code == 200, ok.text
        earlier = await client.post(url, json={"effective_from": "2026-10-01", "casino": True}, headers=ADMIN)
        assert earlier.status_code == 409
        assert [e["pointer"] for e in earlier.json()["errors"]] == ["#/body/effective_from"]
        # PATCH no longer changes rate-bearing attributes in place
        patched = await client.patch(f"/v1/lodgings/{hotel['id']}", json={"casino": True}, headers=ADMIN)
        assert patched.status_code == 422
        assert (
            await _scalar(db, "SELECT count(*) FROM lodging_attributes WHERE lodging_id = :i", i=hotel["id"])
            == 2
        )

    async def test_vi_has_no_casino_rate_and_only_the_agency_admin_records_changes(
        self, client: httpx.AsyncClient
    ) -> None:
        op = await make_operator(client)
        vi = await make_lodging(client, operator_id=op["id"], jurisdiction="VI")
        url = f"/v1/lodgings/{vi['id']}/attributes"
        casino = await client.post(url, json={"effective_from": "2026-11-01", "casino": True}, headers=ADMIN)
        assert [e["pointer"] for e in casino.json()["errors"]] == ["#/body/casino"]
        body = {"effective_from": "2026-11-01", "lodging_class": "timeshare"}
        assert (await client.post(url, json=body, headers=auth("agency-auditor"))).status_code == 403
        assert (
            await client.post(url, json=body, headers=auth("operator", operator_id=op["id"]))
        ).status_code == 403
        other = auth("operator", operator_id="someone-else")
        assert (await client.post(url, json=body, headers=other)).status_code == 404


async def _scalar(db: DB, sql: str, **params: object) -> object:
    async with db() as session:
        return (await session.execute(text(sql), params)).scalar()


class TestMigration:
    async def test_existing_lodgings_get_their_history_from_registration(self) -> None:
        name = db_name(f"roomtax_test_registry_attr_{uuid.uuid4().hex[:6]}")
        url = database_url(name)
        await asyncio.to_thread(upgrade, MIGRATIONS, url, "0001")
        conn = await asyncpg.connect(database_url(name, driver="postgresql"))
        try:
            await conn.execute("INSERT INTO operators (id, name) VALUES ('op1', 'Operadora')")
            await conn.execute(
                "INSERT INTO lodgings (id, tax_account, jurisdiction, lodging_class, casino, name, address,"
                " municipality, room_count, operator_id, registered_on) VALUES ('l1', 'PR-0000001-8', 'PR',"
                " 'hotel', true, 'Casino', '{}', 'San Juan', 10, 'op1', '2025-03-15')"
            )
            await asyncio.to_thread(upgrade, MIGRATIONS, url)
            rows = await conn.fetch(
                "SELECT lodging_id, effective_from, lodging_class, casino FROM lodging_attributes"
            )
            assert [tuple(r) for r in rows] == [("l1", date(2025, 3, 15), "hotel", True)]
        finally:
            await conn.close()
            admin = await asyncpg.connect(database_url("postgres", driver="postgresql"))
            try:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                await admin.close()
