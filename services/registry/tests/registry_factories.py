"""Plain async factory functions that go through the API, as a client would."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

ADMIN = auth("agency-admin")


async def make_operator(client: httpx.AsyncClient, name: str = "Operadora del Caribe") -> dict[str, Any]:
    r = await client.post("/v1/operators", json={"name": name, "email": "ops@example.pr"}, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def make_facilitator(
    client: httpx.AsyncClient, name: str = "Booking Intermediary LLC", operator_id: str | None = None
) -> dict[str, Any]:
    r = await client.post("/v1/facilitators", json={"name": name, "operator_id": operator_id}, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def make_lodging(
    client: httpx.AsyncClient,
    *,
    operator_id: str,
    jurisdiction: str = "PR",
    lodging_class: str = "hotel",
    casino: bool = False,
    name: str = "Hotel El Convento",
    registered_on: str = "2026-01-01",
    room_count: int = 58,
) -> dict[str, Any]:
    r = await client.post(
        "/v1/lodgings",
        json={
            "jurisdiction": jurisdiction,
            "lodging_class": lodging_class,
            "casino": casino,
            "name": name,
            "address": {"line1": "100 Calle del Cristo", "municipality": "San Juan"},
            "room_count": room_count,
            "operator_id": operator_id,
            "registered_on": registered_on,
        },
        headers=ADMIN,
    )
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def scalar(db: async_sessionmaker[AsyncSession], sql: str, **params: Any) -> Any:
    async with db() as session:
        return (await session.execute(text(sql), params)).scalar()


async def outbox_types(db: async_sessionmaker[AsyncSession], key: str) -> list[str]:
    async with db() as session:
        rows = await session.execute(
            text("SELECT event_type FROM outbox WHERE key = :k ORDER BY id"), {"k": key}
        )
        return [r[0] for r in rows]
