"""Registry tables. Status, attribute and bond-draw history are append-only."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    ForeignKey,
    Integer,
    Numeric,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from servicekit.db import Created, make_metadata, new_id


class Base(DeclarativeBase):
    metadata = make_metadata()


class Operator(Created, Base):
    __tablename__ = "operators"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(Text)
    email: Mapped[str | None] = mapped_column(Text)
    tax_id: Mapped[str | None] = mapped_column(Text)


class Facilitator(Created, Base):
    __tablename__ = "facilitators"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(Text)
    email: Mapped[str | None] = mapped_column(Text)
    # a facilitator that is also an operator cannot authorize itself for its own lodgings
    operator_id: Mapped[str | None] = mapped_column(ForeignKey("operators.id"))


class AccountSequence(Base):
    """Next tax account serial per jurisdiction (PR §26)."""

    __tablename__ = "account_sequences"
    jurisdiction: Mapped[str] = mapped_column(Text, primary_key=True)
    last_serial: Mapped[int] = mapped_column(Integer, default=0)


class Lodging(Created, Base):
    __tablename__ = "lodgings"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, unique=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    lodging_class: Mapped[str] = mapped_column(Text)
    casino: Mapped[bool] = mapped_column(Boolean, default=False)
    name: Mapped[str] = mapped_column(Text)
    address: Mapped[dict[str, str]] = mapped_column(JSONB)
    municipality: Mapped[str] = mapped_column(Text)
    room_count: Mapped[int] = mapped_column(Integer)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), index=True)
    registered_on: Mapped[date] = mapped_column(Date)
    #: language of the lodging's official documents (en/es); None: the jurisdiction's default
    preferred_language: Mapped[str | None] = mapped_column(Text, nullable=True)
    statuses: Mapped[list[LodgingStatus]] = relationship(
        order_by="LodgingStatus.effective_from, LodgingStatus.id", lazy="selectin"
    )
    attributes: Mapped[list[LodgingAttribute]] = relationship(
        order_by="LodgingAttribute.effective_from, LodgingAttribute.id", lazy="selectin"
    )
    __table_args__ = (
        CheckConstraint("room_count >= 0", name="room_count_nonnegative"),
        CheckConstraint("preferred_language IN ('en', 'es')", name="preferred_language"),
    )


class LodgingAttribute(Created, Base):
    """Rate-bearing attributes (class, casino licence) in force from a date, append-only.

    The first row is the registration's; ``lodgings.lodging_class``/``casino`` mirror the
    latest row. A period's computation uses the row in force in that period (PR §2(16)).
    """

    __tablename__ = "lodging_attributes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lodging_id: Mapped[str] = mapped_column(ForeignKey("lodgings.id"), index=True)
    effective_from: Mapped[date] = mapped_column(Date)
    lodging_class: Mapped[str] = mapped_column(Text)
    casino: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(Text)
    recorded_by: Mapped[str | None] = mapped_column(Text)


class LodgingStatus(Created, Base):
    """Status history (active, suspended, closed), effective-dated, append-only."""

    __tablename__ = "lodging_statuses"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lodging_id: Mapped[str] = mapped_column(ForeignKey("lodgings.id"), index=True)
    status: Mapped[str] = mapped_column(Text)
    effective_from: Mapped[date] = mapped_column(Date)
    reason: Mapped[str | None] = mapped_column(Text)


class Authorization(Created, Base):
    """A lodging lets a facilitator file and remit for it between two dates."""

    __tablename__ = "authorizations"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    lodging_id: Mapped[str] = mapped_column(ForeignKey("lodgings.id"), index=True)
    facilitator_id: Mapped[str] = mapped_column(ForeignKey("facilitators.id"), index=True)
    starts_on: Mapped[date] = mapped_column(Date)
    ends_on: Mapped[date | None] = mapped_column(Date)


class Bond(Created, Base):
    """PR §27 bond: cash deposit, letter of credit or surety."""

    __tablename__ = "bonds"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    lodging_id: Mapped[str] = mapped_column(ForeignKey("lodgings.id"), index=True)
    kind: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    issuer: Mapped[str] = mapped_column(Text)
    reference: Mapped[str | None] = mapped_column(Text)
    effective_on: Mapped[date] = mapped_column(Date)
    expires_on: Mapped[date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(Text, default="active")
    draws: Mapped[list[BondDraw]] = relationship(order_by="BondDraw.created_at", lazy="selectin")
    __table_args__ = (CheckConstraint("amount > 0", name="amount_positive"),)


class BondDraw(Created, Base):
    """A draw on a bond (PR §33), append-only. ``request_event_id`` makes it idempotent."""

    __tablename__ = "bond_draws"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    bond_id: Mapped[str] = mapped_column(ForeignKey("bonds.id"), index=True)
    amount: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    drawn_on: Mapped[date] = mapped_column(Date)
    reason: Mapped[str] = mapped_column(Text)
    request_event_id: Mapped[str | None] = mapped_column(Text, unique=True)


class ExemptionCertificate(Created, Base):
    """PR §24(F) film production certificate issued by the Company."""

    __tablename__ = "exemption_certificates"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    lodging_id: Mapped[str] = mapped_column(ForeignKey("lodgings.id"), index=True)
    kind: Mapped[str] = mapped_column(Text)
    certificate_number: Mapped[str] = mapped_column(Text, unique=True)
    production: Mapped[str] = mapped_column(Text)
    valid_from: Mapped[date] = mapped_column(Date)
    valid_to: Mapped[date] = mapped_column(Date)


class OAuthClient(Created, Base):
    __tablename__ = "oauth_clients"
    client_id: Mapped[str] = mapped_column(Text, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    secret_hash: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(Text)
    operator_id: Mapped[str | None] = mapped_column(ForeignKey("operators.id"))
    facilitator_id: Mapped[str | None] = mapped_column(ForeignKey("facilitators.id"))
    rotated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    __table_args__ = (UniqueConstraint("name"),)
