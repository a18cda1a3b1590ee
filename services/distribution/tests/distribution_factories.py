"""Plain async helpers: collections arrive as events through the real consumer handler."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
from aiokafka import ConsumerRecord
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from distribution.consumers import collections_consumer as service_consumer
from distribution.ledger.handlers import COLLECTION_POSTED, on_collection_posted
from servicekit.consumer import EventConsumer
from servicekit.testing import auth
from taxcore.events import CloudEvent

ADMIN = auth("agency-admin")
AUDITOR = auth("agency-auditor")
_serial = itertools.count(1)


def collection_event(
    *,
    amount: str | Decimal,
    collected_on: date,
    jurisdiction: str = "PR",
    component: str = "tax",
    posting_id: str | None = None,
    event_id: str | None = None,
    period: str | None = None,
    payment_id: str | None = None,
    refund_id: str | None = None,
) -> CloudEvent:
    n = next(_serial)
    return CloudEvent(
        id=event_id or str(uuid.uuid4()),
        source="/roomtax/assessment",
        type=COLLECTION_POSTED,
        subject=f"{jurisdiction}-000{n}",
        time=datetime.now(UTC),
        data={
            "posting_id": posting_id or f"posting-{uuid.uuid4()}",
            "payment_id": payment_id or f"payment-{n}",
            "tax_account": f"{jurisdiction}-000{n}",
            "jurisdiction": jurisdiction,
            "lodging_class": "hotel",
            "period": period or f"{collected_on.year:04d}-{collected_on.month:02d}",
            "component": component,
            "amount": str(amount),
            "collected_on": collected_on.isoformat(),
            "section": "§28" if jurisdiction == "PR" else "§54(f)",
            **({"refund_id": refund_id} if refund_id else {}),
        },
    )


def collections_consumer(db: async_sessionmaker[AsyncSession]) -> EventConsumer:
    """The service's ``collection.posted`` consumer (its handler and batch size) on ``db``, with
    one attempt per event and no broker: tests hand it records or events."""
    return service_consumer(db, bootstrap="unused:0", runtime=None, max_attempts=1, retry_delay=0)


def collection_record(event: CloudEvent, offset: int) -> ConsumerRecord[bytes, bytes]:
    """``event`` as the broker delivers it, at ``offset`` of partition 0."""
    value = event.model_dump_json().encode()
    return ConsumerRecord("collections", 0, offset, 0, 0, b"k", value, None, 1, len(value), ())


async def collect(db: async_sessionmaker[AsyncSession], **kwargs: Any) -> str:
    """Deliver one ``collection.posted`` event to the consumer (inbox + handler); returns its outcome."""
    event = kwargs.pop("event", None) or collection_event(**kwargs)
    return await collections_consumer(db).apply(event, on_collection_posted)


async def certify(client: httpx.AsyncClient, fiscal_year: int, amount: str, **extra: Any) -> dict[str, Any]:
    body = {
        "fiscal_year": fiscal_year,
        "amount": amount,
        "certified_on": f"{fiscal_year - 1}-06-15",
        "document_reference": f"BGF-CERT-{fiscal_year}",
        **extra,
    }
    r = await client.post("/v1/certifications", json=body, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def run(
    client: httpx.AsyncClient, jurisdiction: str, month: str, *, preview: bool = False, expect: int = 201
) -> dict[str, Any]:
    r = await client.post(
        "/v1/runs", json={"jurisdiction": jurisdiction, "month": month, "preview": preview}, headers=ADMIN
    )
    assert r.status_code == expect, r.text
    return r.json()  # type: ignore[no-any-return]


def allocated(run_body: dict[str, Any]) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for a in run_body["allocations"]:
        out[a["fund"]] = out.get(a["fund"], Decimal(0)) + Decimal(a["amount"])
    return out


async def scalar(db: async_sessionmaker[AsyncSession], sql: str, **params: Any) -> Any:
    async with db() as session:
        return (await session.execute(text(sql), params)).scalar()
