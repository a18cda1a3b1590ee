"""notify initial: the chassis tables, the registry projection, webhooks and e-mails

Revision ID: 0001
Revises:
Create Date: 2026-12-01 12:09:59.803793
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from servicekit.migrations import (
    create_authorizations_projection,
    create_chassis_tables,
    create_outbox_dead_letters,
    create_parties_projection,
    drop_authorizations_projection,
    drop_chassis_tables,
    drop_outbox_dead_letters,
)
from servicekit.revocations import create_revocations_table, drop_revocations_table
from servicekit.schedule import create_job_runs_table, drop_job_runs_table

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    create_chassis_tables()
    create_outbox_dead_letters()
    create_revocations_table()
    create_job_runs_table()
    create_authorizations_projection()
    op.create_table(
        "emails",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("message_key", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("recipient_kind", sa.Text(), nullable=False),
        sa.Column("recipient_id", sa.Text(), nullable=False),
        sa.Column("to_address", sa.Text(), nullable=True),
        sa.Column("language", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=True),
        sa.Column("period", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column(
            "next_attempt_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'sent', 'failed', 'no_address', 'cancelled')",
            name=op.f("ck_emails_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_emails")),
        sa.UniqueConstraint("message_key", name=op.f("uq_emails_message_key")),
    )
    op.create_index(
        "ix_emails_due", "emails", ["next_attempt_at"], unique=False, postgresql_where="status = 'pending'"
    )
    op.create_index(
        "ix_emails_recipient", "emails", ["recipient_kind", "recipient_id", "created_at"], unique=False
    )
    op.create_table(
        "events",
        sa.Column("event_id", sa.Text(), nullable=False),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("awaiting_lodging", sa.Boolean(), nullable=False),
        sa.Column(
            "received_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("event_id", name=op.f("pk_events")),
    )
    op.create_index(
        "ix_events_awaiting", "events", ["tax_account"], unique=False, postgresql_where="awaiting_lodging"
    )
    op.create_table(
        "filings",
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("filer_kind", sa.Text(), nullable=False),
        sa.Column("filed_on", sa.Date(), nullable=False),
        sa.PrimaryKeyConstraint("tax_account", "period", "filer_kind", name=op.f("pk_filings")),
    )
    op.create_table(
        "lodgings",
        sa.Column("lodging_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("operator_id", sa.Text(), nullable=False),
        sa.Column("registered_on", sa.Date(), nullable=False),
        sa.Column("lodging_class", sa.Text(), nullable=False),
        sa.Column("casino", sa.Boolean(), nullable=False),
        sa.Column("statuses", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("attributes", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("language", sa.Text(), nullable=True),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("lodging_id", name=op.f("pk_lodgings")),
        sa.UniqueConstraint("tax_account", name=op.f("uq_lodgings_tax_account")),
    )
    op.create_index(op.f("ix_lodgings_operator_id"), "lodgings", ["operator_id"], unique=False)
    create_parties_projection(sa.Column("email", sa.Text(), nullable=True))
    op.create_table(
        "payments",
        sa.Column("payment_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("amount", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("method", sa.Text(), nullable=False),
        sa.Column("received_on", sa.Date(), nullable=False),
        sa.Column("payer_kind", sa.Text(), nullable=False),
        sa.Column("payer_id", sa.Text(), nullable=False),
        sa.Column("periods", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.PrimaryKeyConstraint("payment_id", name=op.f("pk_payments")),
    )
    op.create_index(op.f("ix_payments_tax_account"), "payments", ["tax_account"], unique=False)
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("owner_kind", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("event_types", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("previous_secret", sa.Text(), nullable=True),
        sa.Column("previous_secret_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('active', 'disabled')", name=op.f("ck_subscriptions_status")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriptions")),
    )
    op.create_index(
        "ix_subscriptions_owner", "subscriptions", ["owner_kind", "owner_id", "created_at"], unique=False
    )
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("subscription_id", sa.Text(), nullable=False),
        sa.Column("event_id", sa.Text(), nullable=False),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column(
            "next_attempt_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.Column("first_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.CheckConstraint("status IN ('pending', 'delivered', 'failed')", name=op.f("ck_deliveries_status")),
        sa.ForeignKeyConstraint(
            ["event_id"], ["events.event_id"], name=op.f("fk_deliveries_event_id_events")
        ),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["subscriptions.id"],
            name=op.f("fk_deliveries_subscription_id_subscriptions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
        sa.UniqueConstraint(
            "subscription_id", "event_id", name=op.f("uq_deliveries_subscription_id_event_id")
        ),
    )
    op.create_index(
        "ix_deliveries_due",
        "deliveries",
        ["next_attempt_at"],
        unique=False,
        postgresql_where="status = 'pending'",
    )
    op.create_index(
        "ix_deliveries_subscription", "deliveries", ["subscription_id", "created_at"], unique=False
    )
    op.create_table(
        "delivery_attempts",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("delivery_id", sa.Text(), nullable=False),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("manual", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["delivery_id"], ["deliveries.id"], name=op.f("fk_delivery_attempts_delivery_id_deliveries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_attempts")),
    )
    op.create_index(
        op.f("ix_delivery_attempts_delivery_id"), "delivery_attempts", ["delivery_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_delivery_attempts_delivery_id"), table_name="delivery_attempts")
    op.drop_table("delivery_attempts")
    op.drop_index("ix_deliveries_subscription", table_name="deliveries")
    op.drop_index("ix_deliveries_due", table_name="deliveries", postgresql_where="status = 'pending'")
    op.drop_table("deliveries")
    op.drop_index("ix_subscriptions_owner", table_name="subscriptions")
    op.drop_table("subscriptions")
    op.drop_index(op.f("ix_payments_tax_account"), table_name="payments")
    op.drop_table("payments")
    op.drop_table("parties")
    op.drop_index(op.f("ix_lodgings_operator_id"), table_name="lodgings")
    op.drop_table("lodgings")
    op.drop_table("filings")
    op.drop_index("ix_events_awaiting", table_name="events", postgresql_where="awaiting_lodging")
    op.drop_table("events")
    op.drop_index("ix_emails_recipient", table_name="emails")
    op.drop_index("ix_emails_due", table_name="emails", postgresql_where="status = 'pending'")
    op.drop_table("emails")
    drop_authorizations_projection()
    drop_job_runs_table()
    drop_revocations_table()
    drop_outbox_dead_letters()
    drop_chassis_tables()
