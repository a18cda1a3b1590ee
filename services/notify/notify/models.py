"""notify's tables: its projection of the registry (who may read what, and how to reach
them), the events it received, webhook subscriptions and deliveries, and e-mails.

``delivery_attempts`` is append-only (the delivery log); a delivery's row carries its
current state. ``emails`` is the outbox of the mail sender: a row is written in the
transaction that decided to send it, and the sender claims and sends it afterwards.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from servicekit.db import make_metadata, new_id
from servicekit.projections import AuthorizationColumns, LodgingColumns, PartyColumns, PaymentColumns


class Base(DeclarativeBase):
    metadata = make_metadata()


class Lodging(LodgingColumns, Base):
    """The registry's lodging snapshot (its operator decides who may read its events)."""

    __tablename__ = "lodgings"
    #: ``preferred_language`` of the registry snapshot when it carries one, else None
    language: Mapped[str | None] = mapped_column(Text)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Party(PartyColumns, Base):
    """An operator or facilitator: its name and the address its notices go to."""

    __tablename__ = "parties"

    email: Mapped[str | None] = mapped_column(Text)


class Authorization(AuthorizationColumns, Base):
    __tablename__ = "authorizations"


class Filing(Base):
    """A declaration received for a lodging-period, by filer (reminders skip filed periods)."""

    __tablename__ = "filings"

    tax_account: Mapped[str] = mapped_column(Text, primary_key=True)
    period: Mapped[str] = mapped_column(Text, primary_key=True)
    filer_kind: Mapped[str] = mapped_column(Text, primary_key=True)
    filed_on: Mapped[date] = mapped_column(Date)


class Payment(PaymentColumns, Base):
    """A payment received (a receipt may be e-mailed on request, PR §28(C))."""

    __tablename__ = "payments"

    periods: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)


class ReceivedEvent(Base):
    """Every event a subscriber may receive, as its CloudEvent JSON (the webhook body).

    ``awaiting_lodging``: the lodging it names was not projected yet, so the subscribers
    bound to the lodging's operator get it when the registry's snapshot arrives.
    """

    __tablename__ = "events"

    event_id: Mapped[str] = mapped_column(Text, primary_key=True)
    event_type: Mapped[str] = mapped_column(Text)
    tax_account: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    awaiting_lodging: Mapped[bool] = mapped_column(Boolean, default=False)
    received_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.clock_timestamp()
    )

    __table_args__ = (Index("ix_events_awaiting", "tax_account", postgresql_where="awaiting_lodging"),)


class Subscription(Base):
    """A webhook endpoint and the event types it wants; owned by one party (or the agency)."""

    __tablename__ = "subscriptions"

    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    owner_kind: Mapped[str] = mapped_column(Text)  # operator | facilitator | agency
    owner_id: Mapped[str] = mapped_column(Text)
    url: Mapped[str] = mapped_column(Text)
    event_types: Mapped[list[str]] = mapped_column(ARRAY(Text))
    description: Mapped[str | None] = mapped_column(Text)
    #: kept to sign (an HMAC needs the key itself); never returned after creation or rotation
    secret: Mapped[str] = mapped_column(Text)
    previous_secret: Mapped[str | None] = mapped_column(Text)
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(Text, default="active")
    disabled_reason: Mapped[str | None] = mapped_column(Text)
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.clock_timestamp()
    )
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint("status IN ('active', 'disabled')", name="status"),
        Index("ix_subscriptions_owner", "owner_kind", "owner_id", "created_at"),
    )


class Delivery(Base):
    """One event for one subscription: at-least-once, retried with exponential backoff."""

    __tablename__ = "deliveries"

    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    subscription_id: Mapped[str] = mapped_column(ForeignKey("subscriptions.id"))
    event_id: Mapped[str] = mapped_column(ForeignKey("events.event_id"))
    event_type: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text, default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.clock_timestamp()
    )
    first_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.clock_timestamp()
    )

    __table_args__ = (
        UniqueConstraint("subscription_id", "event_id"),
        CheckConstraint("status IN ('pending', 'delivered', 'failed')", name="status"),
        Index("ix_deliveries_due", "next_attempt_at", postgresql_where="status = 'pending'"),
        Index("ix_deliveries_subscription", "subscription_id", "created_at"),
    )


class DeliveryAttempt(Base):
    """The delivery log: one row per HTTP attempt (append-only)."""

    __tablename__ = "delivery_attempts"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(ForeignKey("deliveries.id"), index=True)
    attempted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int] = mapped_column(Integer)
    manual: Mapped[bool] = mapped_column(Boolean, default=False)


class Email(Base):
    """One e-mail, idempotent by ``message_key`` (the event or decision it comes from)."""

    __tablename__ = "emails"

    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    message_key: Mapped[str] = mapped_column(Text, unique=True)
    kind: Mapped[str] = mapped_column(Text)  # notice | decision | receipt | reminder | webhook_disabled
    recipient_kind: Mapped[str] = mapped_column(Text)  # operator | facilitator | agency
    recipient_id: Mapped[str] = mapped_column(Text)
    to_address: Mapped[str | None] = mapped_column(Text)
    language: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    tax_account: Mapped[str | None] = mapped_column(Text)
    period: Mapped[str | None] = mapped_column(Text)
    #: pending -> sent | failed; no_address (nobody to send to); cancelled (a reminder whose
    #: period was filed before it left)
    status: Mapped[str] = mapped_column(Text, default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.clock_timestamp()
    )
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.clock_timestamp()
    )

    __table_args__ = (
        CheckConstraint("status IN ('pending', 'sent', 'failed', 'no_address', 'cancelled')", name="status"),
        Index("ix_emails_due", "next_attempt_at", postgresql_where="status = 'pending'"),
        Index("ix_emails_recipient", "recipient_kind", "recipient_id", "created_at"),
    )
