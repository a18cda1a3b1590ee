"""Event builders and a bus that hands them to the service's real consumers."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.consumers import consumers
from servicekit.runtime import PinnedClock, Runtime
from servicekit.settings import ServiceSettings
from servicekit.testing import auth
from taxcore.events import CloudEvent
from taxcore.parameters import default_tree
from taxcore.periods import Period, due_date

TODAY = date(2026, 11, 30)
#: the suite's clock (the app's and the consumers'): ``TODAY`` unless a test moves it
CLOCK = PinnedClock(TODAY)
RUNTIME = Runtime(law=default_tree(), clock=CLOCK)
ADMIN = auth("agency-admin")
AUDITOR = auth("agency-auditor")
_serial = iter(range(1, 10_000_000))


def new_account(jurisdiction: str = "PR") -> str:
    return f"{jurisdiction}-{next(_serial) + 5_000_000:07d}-0"


def cloud_event(
    event_type: str,
    data: dict[str, Any],
    *,
    key: str,
    event_id: str | None = None,
    time: datetime | None = None,
) -> CloudEvent:
    return CloudEvent(
        id=event_id or str(uuid.uuid4()),
        source="/roomtax/test",
        type=event_type,
        subject=key,
        time=time or datetime.now(UTC),
        data=data,
    )


def due(jurisdiction: str, period: str) -> date:
    return due_date(jurisdiction, Period.parse(period))


def lodging_event(
    tax_account: str,
    *,
    jurisdiction: str = "PR",
    lodging_class: str = "hotel",
    operator_id: str = "op-1",
    registered_on: str = "2024-01-01",
    room_count: int = 40,
    statuses: list[dict[str, str]] | None = None,
    casino: bool = False,
    attributes: list[dict[str, Any]] | None = None,
    event_type: str = "roomtax.registry.lodging.registered.v1",
    **extra: Any,
) -> CloudEvent:
    """A lodging snapshot event; ``attributes`` is its effective-dated class / casino history;
    ``extra``: more snapshot fields (``address``, ``preferred_language``, ``name``)."""
    latest = (attributes or [{"lodging_class": lodging_class, "casino": casino}])[-1]
    return cloud_event(
        event_type,
        {
            "lodging_id": f"lodging-{tax_account}",
            "tax_account": tax_account,
            "jurisdiction": jurisdiction,
            "lodging_class": latest["lodging_class"],
            "casino": latest["casino"],
            "name": f"Hotel {tax_account}",
            "municipality": "San Juan" if jurisdiction == "PR" else "St. Thomas",
            "room_count": room_count,
            "operator_id": operator_id,
            "registered_on": registered_on,
            "statuses": statuses or [{"status": "active", "effective_from": registered_on}],
            **({"attributes": attributes} if attributes is not None else {}),
            **extra,
        },
        key=tax_account,
    )


class Bus:
    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], settings: ServiceSettings, runtime: Runtime
    ) -> None:
        self.consumers = consumers(settings, sessionmaker, runtime)
        for c in self.consumers:
            c.retry_delay = 0.0
            c.max_attempts = 1

    async def send(self, event: CloudEvent) -> str:
        for consumer in self.consumers:
            handler = consumer.handlers.get(event.type)
            if handler is not None:
                return await consumer.apply(event, handler)
        raise AssertionError(f"no consumer handles {event.type}")

    async def lodging(self, tax_account: str, **fields: Any) -> CloudEvent:
        """A lodging snapshot (:func:`lodging_event`) applied."""
        event = lodging_event(tax_account, **fields)
        assert await self.send(event) == "applied"
        return event

    async def bond(
        self,
        tax_account: str,
        *,
        amount: str = "5000.00",
        bond_id: str | None = None,
        effective_on: str = "2024-01-01",
        expires_on: str = "2027-12-31",
    ) -> str:
        bond_id = bond_id or str(uuid.uuid4())
        event = cloud_event(
            "roomtax.registry.bond.posted.v1",
            {
                "bond_id": bond_id,
                "lodging_id": f"lodging-{tax_account}",
                "tax_account": tax_account,
                "kind": "surety",
                "amount": amount,
                "issuer": "Surety Co",
                "effective_on": effective_on,
                "expires_on": expires_on,
                "status": "active",
            },
            key=tax_account,
        )
        assert await self.send(event) == "applied"
        return bond_id

    async def declare(
        self,
        tax_account: str,
        period: str,
        *,
        jurisdiction: str = "PR",
        room_revenue: str = "100000.00",
        filed_on: date | None = None,
        declared_total: str | None = None,
        version: int = 1,
        filing_id: str | None = None,
        supersedes: str | None = None,
        filer_kind: str = "operator",
        filer_id: str = "op-1",
        findings: list[dict[str, Any]] | None = None,
        lodging_class: str = "hotel",
        event_id: str | None = None,
        timeshare_owner_unit_days: int = 0,
        lines: dict[str, Any] | None = None,
    ) -> CloudEvent:
        """A declaration version; ``lines`` replaces the default lines (``DeclarationInput`` fields)."""
        from taxcore.rules.declaration import DeclarationInput, compute_allowed

        fields: dict[str, Any] = {
            "room_revenue": Decimal(room_revenue),
            "room_nights": 100,
            "timeshare_owner_unit_days": timeshare_owner_unit_days,
        }
        if lines is not None:
            fields = dict(lines)
        inp = DeclarationInput(
            jurisdiction=jurisdiction, lodging_class=lodging_class, period=period, **fields
        )
        res = compute_allowed(inp)
        d = due(jurisdiction, period)
        filed = filed_on or d
        etype = (
            "roomtax.filing.declaration.filed.v1" if version == 1 else "roomtax.filing.declaration.amended.v1"
        )
        event = cloud_event(
            etype,
            {
                "declaration_id": str(uuid.uuid4()),
                "filing_id": filing_id or str(uuid.uuid4()),
                "version": version,
                "supersedes": supersedes,
                "tax_account": tax_account,
                "lodging_id": f"lodging-{tax_account}",
                "jurisdiction": jurisdiction,
                "lodging_class": lodging_class,
                "period": period,
                "filer_kind": filer_kind,
                "filer_id": filer_id,
                "filed_on": filed.isoformat(),
                "due_date": d.isoformat(),
                "late": filed > d,
                "input": inp.model_dump(mode="json"),
                "taxable_base": str(res.taxable_base),
                "tax": str(res.tax),
                "impact_fee": str(res.impact_fee),
                "total_due": str(res.total_due),
                "declared_tax": declared_total if declared_total is not None else str(res.tax),
                "declared_total": declared_total if declared_total is not None else str(res.total_due),
                "findings": findings or [],
            },
            key=tax_account,
            event_id=event_id,
        )
        assert await self.send(event) == "applied"
        return event

    async def amend(self, version: CloudEvent, **fields: Any) -> CloudEvent:
        """The next version of ``version``'s filing (its account, period and filer), superseding it;
        ``fields`` as :meth:`declare`'s."""
        data = version.data
        fields = {"filer_kind": data["filer_kind"], "filer_id": data["filer_id"]} | fields
        return await self.declare(
            data["tax_account"],
            data["period"],
            jurisdiction=data["jurisdiction"],
            version=data["version"] + 1,
            filing_id=data["filing_id"],
            supersedes=data["declaration_id"],
            **fields,
        )

    async def pay(
        self,
        tax_account: str,
        amount: str,
        received_on: date,
        *,
        jurisdiction: str = "PR",
        periods: dict[str, str] | None = None,
        payment_id: str | None = None,
    ) -> str:
        payment_id = payment_id or f"pay-{uuid.uuid4()}"
        event = cloud_event(
            "roomtax.filing.payment.received.v1",
            {
                "payment_id": payment_id,
                "tax_account": tax_account,
                "jurisdiction": jurisdiction,
                "amount": amount,
                "method": "ach",
                "received_on": received_on.isoformat(),
                "payer_kind": "operator",
                "payer_id": "op-1",
                "periods": [{"period": p, "amount": a} for p, a in (periods or {}).items()],
            },
            key=tax_account,
        )
        assert await self.send(event) == "applied"
        return payment_id

    async def reverse(
        self,
        tax_account: str,
        payment_id: str,
        amount: str,
        reversed_on: date,
        *,
        jurisdiction: str = "PR",
        reversal_id: str | None = None,
    ) -> CloudEvent:
        event = cloud_event(
            "roomtax.filing.payment.reversed.v1",
            {
                "reversal_id": reversal_id or f"rev-{uuid.uuid4()}",
                "payment_id": payment_id,
                "tax_account": tax_account,
                "jurisdiction": jurisdiction,
                "amount": amount,
                "reversed_on": reversed_on.isoformat(),
                "reason": "dishonoured cheque",
            },
            key=tax_account,
        )
        assert await self.send(event) == "applied"
        return event


async def statement(
    client: httpx.AsyncClient,
    tax_account: str,
    as_of: date | str,
    *,
    headers: dict[str, str] | None = None,
    explain: bool = False,
) -> dict[str, Any]:
    params: dict[str, str] = {"as_of": str(as_of)}
    if explain:
        params["explain"] = "true"
    r = await client.get(f"/v1/accounts/{tax_account}/statement", params=params, headers=headers or AUDITOR)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def rows(db: async_sessionmaker[AsyncSession], sql: str, **params: Any) -> list[Any]:
    async with db() as session:
        return list((await session.execute(text(sql), params)).all())


async def posted_by_payment(db: async_sessionmaker[AsyncSession], tax_account: str) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for r in await rows(
        db,
        "SELECT payload FROM outbox WHERE key = :k AND event_type = "
        "'roomtax.assessment.collection.posted.v1' ORDER BY id",
        k=tax_account,
    ):
        data = r[0]["data"]
        out[data["payment_id"]] = out.get(data["payment_id"], Decimal(0)) + Decimal(data["amount"])
    return out
