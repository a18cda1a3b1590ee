"""Alembic helpers: one tree per service, one database per service.

Migrations run by a command (``python -m <service> migrate``), never at app
start-up. Every service's first migration creates the chassis tables with
:func:`create_chassis_tables` (outbox, inbox, dead letters, idempotency keys);
later chassis tables come with their own helper (:func:`create_outbox_dead_letters`),
called by a new migration in every service. The projection tables several services keep
of the registry's snapshots (``servicekit.projections``) have theirs too
(:func:`create_authorizations_projection`, :func:`create_parties_projection`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import sqlalchemy as sa
from alembic import command, context, op
from alembic.config import Config
from sqlalchemy import MetaData, pool
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import async_engine_from_config

#: the type of every money column (NUMERIC(18,2), ``servicekit.db.Money``)
MONEY = sa.Numeric(precision=18, scale=2)


def created_at_column() -> sa.Column[object]:
    """``created_at`` of an append-only row (``servicekit.db.Created``)."""
    return sa.Column(
        "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def sequence_column(sequence: str, name: str = "seq") -> sa.Column[object]:
    """A write-order column filled from an existing sequence (``nextval``)."""
    return sa.Column(name, sa.BigInteger(), server_default=sa.text(f"nextval('{sequence}')"), nullable=False)


def create_chassis_tables() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("event_id", sa.Text, nullable=False, unique=True),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("event_type", sa.Text, nullable=False),
        sa.Column("payload", postgresql.JSONB, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("published_at", sa.DateTime(timezone=True)),
        sa.Column("partition", sa.Integer),
        sa.Column("offset", sa.BigInteger),
    )
    op.create_index(
        "ix_outbox_unpublished", "outbox", ["id"], postgresql_where=sa.text("published_at IS NULL")
    )
    op.create_index("ix_outbox_created_at", "outbox", ["created_at"])
    op.create_table(
        "inbox",
        sa.Column("consumer", sa.Text, primary_key=True),
        sa.Column("event_id", sa.Text, primary_key=True),
        sa.Column("event_type", sa.Text, nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("consumer", sa.Text, nullable=False),
        sa.Column("event_id", sa.Text),
        sa.Column("event_type", sa.Text),
        sa.Column("topic", sa.Text),
        sa.Column("partition", sa.Integer),
        sa.Column("offset", sa.BigInteger),
        sa.Column("payload", postgresql.JSONB),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("scope", sa.Text, primary_key=True),
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("request_hash", sa.Text, nullable=False),
        sa.Column("status_code", sa.Integer),
        sa.Column("response_body", sa.LargeBinary),
        sa.Column("content_type", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )


def create_outbox_dead_letters() -> None:
    """Outbox rows the relay could not publish and will never publish as they are.

    A row that fails permanently (larger than the broker accepts, not serializable)
    is parked here with its error, and later rows of the same key wait behind it
    (per-lodging order); other keys keep flowing. An agency-admin releases (retry)
    or discards the row; who did it, when and why stay on the row (audit).
    """
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "outbox_dead_letters",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("outbox_id", sa.BigInteger, nullable=False),
        sa.Column("event_id", sa.Text, nullable=False),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("event_type", sa.Text, nullable=False),
        sa.Column("payload", postgresql.JSONB, nullable=False),
        sa.Column("payload_bytes", sa.Integer, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("relay", sa.Text, nullable=False),
        sa.Column("parked_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("resolution", sa.Text),
        sa.Column("resolved_at", sa.DateTime(timezone=True)),
        sa.Column("resolved_by", sa.Text),
        sa.Column("resolution_note", sa.Text),
        sa.CheckConstraint(
            "(resolution IS NULL AND resolved_at IS NULL AND resolved_by IS NULL) OR "
            "(resolution IN ('released', 'discarded') "
            "AND resolved_at IS NOT NULL AND resolved_by IS NOT NULL)",
            name="ck_outbox_dead_letters_resolution",
        ),
    )
    op.create_index(
        "ix_outbox_dead_letters_open_key",
        "outbox_dead_letters",
        ["key", "outbox_id"],
        postgresql_where=sa.text("resolution IS NULL"),
    )
    op.create_index(
        "uq_outbox_dead_letters_open_row",
        "outbox_dead_letters",
        ["outbox_id"],
        unique=True,
        postgresql_where=sa.text("resolution IS NULL"),
    )


def drop_outbox_dead_letters() -> None:
    op.drop_table("outbox_dead_letters")


def add_outbox_traceparent() -> None:
    """The W3C ``traceparent`` of the span that emitted each outbox row (NULL outside a
    trace): the relay sends it on, so the consumers continue the trace (servicekit.telemetry).
    A nullable column without a default: adding it rewrites nothing."""
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column("outbox", sa.Column("traceparent", sa.Text))


def drop_outbox_traceparent() -> None:
    op.drop_column("outbox", "traceparent")


def create_authorizations_projection() -> None:
    """The ``authorizations`` projection of the registry (``servicekit.projections.AuthorizationColumns``)."""
    op.create_table(
        "authorizations",
        sa.Column("authorization_id", sa.Text(), nullable=False),
        sa.Column("lodging_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("facilitator_id", sa.Text(), nullable=False),
        sa.Column("starts_on", sa.Date(), nullable=False),
        sa.Column("ends_on", sa.Date(), nullable=True),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("authorization_id", name=op.f("pk_authorizations")),
    )
    op.create_index(
        op.f("ix_authorizations_facilitator_id"), "authorizations", ["facilitator_id"], unique=False
    )
    op.create_index(op.f("ix_authorizations_lodging_id"), "authorizations", ["lodging_id"], unique=False)


def drop_authorizations_projection() -> None:
    op.drop_index(op.f("ix_authorizations_lodging_id"), table_name="authorizations")
    op.drop_index(op.f("ix_authorizations_facilitator_id"), table_name="authorizations")
    op.drop_table("authorizations")


def create_parties_projection(*extra: sa.Column[object]) -> None:
    """The ``parties`` projection of the registry (``servicekit.projections.PartyColumns``), with
    the ``extra`` columns a service keeps besides the name (between ``name`` and ``as_of``)."""
    op.create_table(
        "parties",
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("party_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        *extra,
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("kind", "party_id", name=op.f("pk_parties")),
    )


def add_lodging_attributes() -> None:
    """The effective-dated class and casino licence (``LodgingColumns.attributes``) on an existing
    ``lodgings`` projection: each row gets one entry, its values effective from registration
    (the registry migrates its own rows the same way)."""
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column(
        "lodgings",
        sa.Column(
            "attributes",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
        ),
    )
    op.execute(
        "UPDATE lodgings SET attributes = jsonb_build_array(jsonb_build_object("
        "'effective_from', to_char(registered_on, 'YYYY-MM-DD'), "
        "'lodging_class', lodging_class, 'casino', casino))"
    )
    op.alter_column("lodgings", "attributes", server_default=None)


def drop_lodging_attributes() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_column("lodgings", "attributes")


def drop_chassis_tables() -> None:
    for table in ("idempotency_keys", "dead_letters", "inbox", "outbox"):
        op.drop_table(table)


def run_env(target_metadata: MetaData) -> None:
    """Body of every service's ``migrations/env.py`` (async engine, online mode)."""
    config = context.config

    def do_run(connection: sa.Connection) -> None:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            compare_type=True,
            transaction_per_migration=True,
        )
        with context.begin_transaction():
            context.run_migrations()

    async def online() -> None:
        engine = async_engine_from_config(
            config.get_section(config.config_ini_section, {}),
            prefix="sqlalchemy.",
            poolclass=pool.NullPool,
        )
        async with engine.connect() as connection:
            await connection.run_sync(do_run)
        await engine.dispose()

    if context.is_offline_mode():
        context.configure(
            url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata, literal_binds=True
        )
        with context.begin_transaction():
            context.run_migrations()
    else:
        asyncio.run(online())


async def ensure_database(database_url: str) -> None:
    """Create the service's database when it does not exist yet."""
    parts = urlsplit(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    conn = await asyncpg.connect(admin)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


def alembic_config(migrations_dir: Path, database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    cfg.set_main_option("file_template", "%%(year)d%%(month).2d%%(day).2d_%%(rev)s_%%(slug)s")
    return cfg


def upgrade(migrations_dir: Path, database_url: str, revision: str = "head") -> None:
    asyncio.run(ensure_database(database_url))
    command.upgrade(alembic_config(migrations_dir, database_url), revision)


def downgrade(migrations_dir: Path, database_url: str, revision: str) -> None:
    command.downgrade(alembic_config(migrations_dir, database_url), revision)
