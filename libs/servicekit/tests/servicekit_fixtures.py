"""A tiny service used to test the chassis: one table, one write endpoint, one event."""

from __future__ import annotations

from typing import Any

import asyncpg
import sqlalchemy as sa
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from fastapi import FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from servicekit.app import create_app, router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound
from servicekit.migrations import add_outbox_traceparent, create_chassis_tables, create_outbox_dead_letters
from servicekit.outbox import emit
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.revocations import allow_session_revocations, create_revocations_table
from servicekit.settings import ServiceSettings
from servicekit.testing import database_url, test_database_name

TOPIC = "chassis.widgets"
EVENT = "roomtax.chassis.widget.made.v1"
UPLOAD_LIMIT = 4 * 1024 * 1024


async def make_chassis_db(name: str) -> str:
    name = test_database_name(name)
    conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = database_url(name)
    engine = create_async_engine(url)

    def migrate(connection: sa.Connection) -> None:
        ctx = MigrationContext.configure(connection)
        with Operations.context(ctx):
            create_chassis_tables()
            create_outbox_dead_letters()
            create_revocations_table()
            allow_session_revocations()
            add_outbox_traceparent()
        connection.execute(
            text(
                "CREATE TABLE widgets (id serial PRIMARY KEY, name text UNIQUE NOT NULL, "
                "amount numeric(18,2) NOT NULL)"
            )
        )
        # seq: the order rows were inserted in (ctid is not: two backends inserting at once
        # write to different pages, so a page's order says nothing of which came first)
        connection.execute(
            text(
                "CREATE TABLE applied (seq bigserial PRIMARY KEY, event_id text NOT NULL, name text NOT NULL)"
            )
        )

    async with engine.begin() as conn:
        await conn.run_sync(migrate)
    await engine.dispose()
    return url


class WidgetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    amount: str = Field(pattern=r"^\d+\.\d{2}$")


class WidgetOut(BaseModel):
    id: int
    name: str
    amount: str


widgets = router(prefix="/v1/widgets", tags=["widgets"])


@widgets.post("", status_code=201, response_model=WidgetOut)
async def make_widget(body: WidgetIn, session: SessionDep, _: PrincipalDep, check: bool = True) -> WidgetOut:
    exists = (await session.execute(text("SELECT 1 FROM widgets WHERE name = :n"), {"n": body.name})).first()
    if exists and check:
        raise Conflict(f"widget {body.name!r} exists")
    row = (
        await session.execute(
            text("INSERT INTO widgets (name, amount) VALUES (:n, CAST(:a AS numeric)) RETURNING id"),
            {"n": body.name, "a": body.amount},
        )
    ).one()
    await emit(
        session, event_type=EVENT, key=body.name, topic=TOPIC, data={"name": body.name, "amount": body.amount}
    )
    return WidgetOut(id=row.id, name=body.name, amount=body.amount)


@widgets.get("", response_model=Page[WidgetOut])
async def list_widgets(
    session: SessionDep, _: PrincipalDep, limit: LimitQuery = 10, cursor: CursorQuery = None
) -> Page[WidgetOut]:
    after = decode_cursor(cursor, arity=1)
    rows = (
        await session.execute(
            text("SELECT id, name, amount::text AS amount FROM widgets WHERE id > :a ORDER BY id LIMIT :l"),
            {"a": int(after[0]) if after else 0, "l": limit + 1},
        )
    ).all()
    return paginate(
        rows,
        limit=limit,
        key=lambda r: [r.id],
        to_item=lambda r: WidgetOut(id=r.id, name=r.name, amount=r.amount),
    )


@widgets.get("/{widget_id}", response_model=WidgetOut)
async def get_widget(widget_id: int, session: SessionDep, _: PrincipalDep) -> WidgetOut:
    row = (
        await session.execute(
            text("SELECT id, name, amount::text AS amount FROM widgets WHERE id = :i"), {"i": widget_id}
        )
    ).first()
    if row is None:
        raise NotFound(f"no widget {widget_id}")
    return WidgetOut(id=row.id, name=row.name, amount=row.amount)


@widgets.post("/bulk", status_code=201)
async def bulk(request: Request, _: PrincipalDep) -> dict[str, int]:
    """An upload route (its body may reach ``max_upload_bytes``), like filing's schedules."""
    return {"bytes": len(await request.body())}


@widgets.post("/public/nonce", status_code=201)
async def public_nonce() -> dict[str, str]:
    """A public POST (no token), like the registry's token endpoint."""
    import secrets

    return {"nonce": secrets.token_hex(8)}


@widgets.post("/{widget_id}/explode", status_code=200)
async def explode(widget_id: int, _: PrincipalDep) -> None:
    raise RuntimeError("boom: an unexpected failure")


def build_widget_app(database_url: str, bootstrap: str, **settings_overrides: Any) -> FastAPI:
    settings = ServiceSettings(
        service_name="widgets",
        environment="test",
        database_url=database_url,
        kafka_bootstrap=bootstrap,
        max_upload_bytes=UPLOAD_LIMIT,
        **settings_overrides,
    )
    return create_app(
        settings,
        title="Widgets",
        description="chassis test service",
        routers=[widgets],
        upload_paths=["/v1/widgets/bulk"],
    )
