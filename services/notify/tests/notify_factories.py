"""Plain helpers: registry, filing and assessment events applied through notify's real
consumer (inbox + handler), webhooks made through the API, a real HTTP receiver."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import httpx
from aiohttp import web
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from notify.consumers import NAME, handlers
from notify.settings import NotifySettings
from servicekit.consumer import EventConsumer
from servicekit.testing import auth, free_port, new_key_pair
from taxcore.events import CloudEvent

DB = async_sessionmaker[AsyncSession]
ADMIN = auth("agency-admin")
DASHBOARD = auth("dashboard")
_serial = itertools.count(1)


def production_settings(**overrides: Any) -> NotifySettings:
    """Production settings with keys of their own (the development ones are refused there)."""
    _, public = new_key_pair()
    values: dict[str, Any] = {
        "jwt_public_key": public,
        "webhook_secret_keys": Fernet.generate_key().decode(),
    }
    return NotifySettings(environment="production", **(values | overrides))


def event(event_type: str, data: dict[str, Any], *, event_id: str | None = None) -> CloudEvent:
    return CloudEvent(
        id=event_id or str(uuid.uuid4()),
        source="/roomtax/test",
        type=event_type,
        subject=str(data.get("tax_account") or ""),
        time=datetime.now(UTC),
        data=data,
    )


async def apply(db: DB, settings: NotifySettings, ev: CloudEvent) -> str:
    """Deliver one event to notify's consumer; returns "applied" or "duplicate"."""
    consumer = EventConsumer(
        name=NAME,
        bootstrap="127.0.0.1:1",
        topics=[],
        sessionmaker=db,
        handlers=handlers(settings),
        max_attempts=1,
    )
    handler = consumer.handlers[ev.type]
    return await consumer.apply(ev, handler)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_serial)}-{uuid.uuid4().hex[:6]}"


async def operator(
    db: DB, settings: NotifySettings, *, operator_id: str, email: str | None, name: str = "Hotel Co"
) -> None:
    await apply(
        db,
        settings,
        event(
            "roomtax.registry.operator.registered.v1",
            {"operator_id": operator_id, "name": name, "email": email},
        ),
    )


async def lodging(
    db: DB,
    settings: NotifySettings,
    *,
    operator_id: str,
    tax_account: str | None = None,
    jurisdiction: str = "PR",
    name: str = "Hotel El Faro",
    registered_on: date = date(2026, 1, 1),
) -> str:
    account = tax_account or unique(jurisdiction)
    data = {
        "lodging_id": f"lodging-{account}",
        "tax_account": account,
        "jurisdiction": jurisdiction,
        "lodging_class": "hotel",
        "casino": False,
        "name": name,
        "municipality": "San Juan" if jurisdiction == "PR" else "St. Thomas",
        "room_count": 40,
        "operator_id": operator_id,
        "registered_on": registered_on.isoformat(),
        "statuses": [],
        "attributes": [],
    }
    await apply(db, settings, event("roomtax.registry.lodging.registered.v1", data))
    return account


def declaration(
    tax_account: str,
    *,
    period: str = "2026-11",
    filer_kind: str = "operator",
    filer_id: str = "op",
    jurisdiction: str = "PR",
) -> CloudEvent:
    return event(
        "roomtax.filing.declaration.filed.v1",
        {
            "declaration_id": unique("decl"),
            "filing_id": unique("filing"),
            "version": 1,
            "supersedes": None,
            "tax_account": tax_account,
            "lodging_id": f"lodging-{tax_account}",
            "jurisdiction": jurisdiction,
            "lodging_class": "hotel",
            "period": period,
            "filer_kind": filer_kind,
            "filer_id": filer_id,
            "filed_on": "2026-12-03",
            "due_date": "2026-12-10",
            "late": False,
            "input": {},
            "taxable_base": "10000.00",
            "tax": "900.00",
            "impact_fee": "0.00",
            "total_due": "900.00",
            "declared_tax": "900.00",
            "declared_total": "900.00",
        },
    )


def notice(tax_account: str, *, period: str = "2026-10") -> CloudEvent:
    return event(
        "roomtax.assessment.notice.issued.v1",
        {
            "notice_id": unique("notice"),
            "tax_account": tax_account,
            "jurisdiction": "PR",
            "period": period,
            "kind": "deficiency",
            "reason": "no declaration filed",
            "issued_on": "2026-12-01",
            "response_deadline": "2026-12-31",
            "tax": "1234.50",
            "impact_fee": "0.00",
            "penalty": "0.00",
            "interest": "10.15",
            "fine": "500.00",
            "total": "1744.65",
            "section": "PR Act 272-2003 §32",
        },
    )


async def webhook(
    client: httpx.AsyncClient, headers: dict[str, str], url: str, *types: str
) -> dict[str, Any]:
    r = await client.post("/v1/webhooks", json={"url": url, "event_types": list(types)}, headers=headers)
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def scalar(db: DB, sql: str, **params: Any) -> Any:
    async with db() as session:
        return (await session.execute(text(sql), params)).scalar()


@dataclass
class Receiver:
    """A real HTTP server on a free loopback port that records what it is sent."""

    status: int = 200
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    runner: web.AppRunner | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append((dict(request.headers), await request.read()))
        self.arrived.set()
        return web.Response(status=self.status, text="ok")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hooks", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


class Sink:
    """A real SMTP server (aiosmtpd, its own thread) on a free loopback port."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.messages: list[Any] = []
        self.port = free_port()
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's hook
        from email import message_from_bytes, policy

        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content, policy=policy.default)))
        return "250 OK"

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()


def plan_granted(account: str, **overrides: Any) -> dict[str, Any]:
    """A granted plan's event data: a down payment and two installments."""
    return {
        "plan_id": "plan-1",
        "tax_account": account,
        "jurisdiction": "PR",
        "periods": ["2026-08", "2026-09"],
        "balance_as_of": "2026-12-01",
        "planned_amount": "3000.00",
        "schedule": [
            {"number": 0, "due_on": "2026-12-10", "amount": "1000.00"},
            {"number": 1, "due_on": "2027-01-10", "amount": "1000.00"},
            {"number": 2, "due_on": "2027-02-10", "amount": "1000.00"},
        ],
        "grace_days": 15,
        "granted_on": "2026-12-01",
        "granted_by": "user:u-1",
        "request_id": None,
        "section": "PR Act 272-2003 §3, §33",
        **overrides,
    }


def audit_step(account: str, step: str, **overrides: Any) -> dict[str, Any]:
    return {
        "audit_id": "audit-1",
        "step_id": f"step-{step}",
        "tax_account": account,
        "jurisdiction": "PR",
        "periods": ["2026-07", "2026-08"],
        "step": step,
        "on": "2026-12-01",
        "by": "user:u-2",
        "section": "PR Act 272-2003 §10, §32",
        **overrides,
    }
