"""Factories: the registry projection is fed with the registry's own event contracts,
applied through the projection consumer (inbox included), as the broker would."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, date, datetime
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from filing.consumers import PROJECTION
from filing.projection.handlers import HANDLERS
from servicekit.consumer import EventConsumer
from servicekit.testing import auth
from taxcore.events import CloudEvent, EventData
from taxcore.events import registry as ev

DB = async_sessionmaker[AsyncSession]
ADMIN = auth("agency-admin")
DASHBOARD = auth("dashboard")
_serial = itertools.count(int(uuid.uuid4().int % 9_000_000) + 100_000)


def as_operator(operator_id: str) -> dict[str, str]:
    return auth("operator", operator_id=operator_id)


def as_facilitator(facilitator_id: str) -> dict[str, str]:
    return auth("facilitator", facilitator_id=facilitator_id)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def project(db: DB, event_type: str, data: EventData, *, at: datetime | None = None) -> str:
    """Apply one registry event to the projection; returns the consumer's verdict."""
    consumer = EventConsumer(
        name=PROJECTION, bootstrap="127.0.0.1:1", topics=[], sessionmaker=db, handlers=HANDLERS, retry_delay=0
    )
    event = CloudEvent(
        id=str(uuid.uuid4()),
        source="/roomtax/registry",
        type=event_type,
        subject=getattr(data, "tax_account", None),
        time=at or datetime.now(UTC),
        data=data.model_dump(mode="json"),
    )
    return await consumer.apply(event, HANDLERS[event_type])


async def make_lodging(
    db: DB,
    *,
    jurisdiction: str = "PR",
    lodging_class: str = "hotel",
    casino: bool = False,
    operator_id: str | None = None,
    registered_on: date = date(2026, 1, 1),
    name: str = "Hotel El Convento",
    statuses: list[tuple[str, date]] | None = None,
) -> ev.LodgingRegistered:
    snapshot = ev.LodgingRegistered(
        lodging_id=str(uuid.uuid4()),
        tax_account=f"{jurisdiction}-{next(_serial) % 10_000_000:07d}-0",
        jurisdiction=jurisdiction,
        lodging_class=lodging_class,
        casino=casino,
        name=name,
        municipality="San Juan" if jurisdiction == "PR" else "St. Thomas",
        room_count=58,
        operator_id=operator_id or new_id("op"),
        registered_on=registered_on,
        statuses=[
            ev.StatusPeriod(status=s, effective_from=d) for s, d in (statuses or [("active", registered_on)])
        ],
    )
    assert await project(db, "roomtax.registry.lodging.registered.v1", snapshot) == "applied"
    return snapshot


async def change_status(db: DB, lodging: ev.LodgingRegistered, status: str, effective: date) -> None:
    changed = ev.LodgingStatusChanged.model_validate(
        {
            **lodging.model_dump(),
            "statuses": [
                *[s.model_dump() for s in lodging.statuses],
                {"status": status, "effective_from": effective},
            ],
        }
    )
    assert await project(db, "roomtax.registry.lodging.status_changed.v1", changed) == "applied"


async def change_attributes(
    db: DB,
    lodging: ev.LodgingRegistered,
    effective: date,
    *,
    lodging_class: str | None = None,
    casino: bool | None = None,
) -> ev.LodgingAttributesChanged:
    """The registry's attributes_changed snapshot: a class / casino entry from ``effective``."""
    history = lodging.attribute_history()
    latest = history[-1]
    entry = ev.AttributePeriod(
        effective_from=effective,
        lodging_class=lodging_class or latest.lodging_class,
        casino=latest.casino if casino is None else casino,
    )
    changed = ev.LodgingAttributesChanged.model_validate(
        {
            **lodging.model_dump(),
            "lodging_class": entry.lodging_class,
            "casino": entry.casino,
            "attributes": [*history, entry],
        }
    )
    assert await project(db, "roomtax.registry.lodging.attributes_changed.v1", changed) == "applied"
    return changed


async def authorize(
    db: DB,
    lodging: ev.LodgingRegistered,
    facilitator_id: str,
    *,
    starts_on: date = date(2026, 1, 1),
    ends_on: date | None = None,
) -> None:
    grant = ev.AuthorizationGranted(
        authorization_id=str(uuid.uuid4()),
        lodging_id=lodging.lodging_id,
        tax_account=lodging.tax_account,
        facilitator_id=facilitator_id,
        starts_on=starts_on,
        ends_on=ends_on,
    )
    assert await project(db, "roomtax.registry.authorization.granted.v1", grant) == "applied"


async def certify(
    db: DB, lodging: ev.LodgingRegistered, number: str, valid_from: date, valid_to: date
) -> None:
    cert = ev.CertificateIssued(
        certificate_id=str(uuid.uuid4()),
        lodging_id=lodging.lodging_id,
        tax_account=lodging.tax_account,
        kind="pr_film_production",
        certificate_number=number,
        production="La Isla (feature film)",
        valid_from=valid_from,
        valid_to=valid_to,
    )
    assert await project(db, "roomtax.registry.certificate.issued.v1", cert) == "applied"


def declaration(lodging: ev.LodgingRegistered, period: str = "2026-10", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "lodging": lodging.tax_account,
        "period": period,
        "room_revenue": "10000.00",
        "room_nights": 50,
        "declared": {"taxable_base": "10000.00", "tax": "900.00", "total": "900.00"},
    }
    body.update(fields)
    return body


async def file(
    client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str], status: int = 201
) -> dict[str, Any]:
    r = await client.post("/v1/declarations", json=body, headers=headers)
    assert r.status_code == status, r.text
    return r.json()  # type: ignore[no-any-return]


async def scalar(db: DB, sql: str, **params: Any) -> Any:
    async with db() as session:
        return (await session.execute(text(sql), params)).scalar()


async def outbox(db: DB, key: str) -> list[tuple[str, dict[str, Any]]]:
    async with db() as session:
        rows = await session.execute(
            text("SELECT event_type, payload FROM outbox WHERE key = :k ORDER BY id"), {"k": key}
        )
        return [(r[0], r[1]) for r in rows]
