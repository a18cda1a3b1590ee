"""Filing tables.

``lodgings``, ``authorizations`` and ``certificates`` are a projection of the
registry's events (topic ``registry.lodgings``), rebuilt by the consumer
``filing-registry-projection``; the service never reads the registry's database.

Declarations, remittance schedules, payments and payment reversals are
append-only: a database trigger refuses UPDATE and DELETE on them. An amendment
is a new declaration version, a bounced check a new reversal row.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

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
    Numeric,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from servicekit.db import Money, make_metadata, new_id
from servicekit.projections import AuthorizationColumns, LodgingColumns, PartyColumns


class Base(DeclarativeBase):
    metadata = make_metadata()


# --------------------------------------------------------------------------- projection


class Lodging(LodgingColumns, Base):
    """The registry's lodging snapshot, as of its latest event."""

    __tablename__ = "lodgings"
    jurisdiction: Mapped[str] = mapped_column(Text, index=True)
    municipality: Mapped[str] = mapped_column(Text)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LodgingRow(NamedTuple):
    """A lodging as a remittance schedule reads it: the ``lodgings`` row's columns in the
    table's order, as plain attributes (``schedules.repository.lodgings_for_facilitator``).

    Only read, never written: a tuple, not an ORM instance, because a schedule reads some 14
    attributes of each of up to 50,000 lodgings, and an instrumented attribute costs ~0.26 us
    to read (a tuple's ~0.02), an instance ~2.7 us to build (a tuple ~0.5)."""

    jurisdiction: str
    municipality: str
    as_of: datetime
    lodging_id: str
    tax_account: str
    lodging_class: str
    casino: bool
    name: str
    operator_id: str
    registered_on: date
    statuses: list[dict[str, Any]]
    attributes: list[dict[str, Any]]


assert LodgingRow._fields == tuple(c.name for c in Lodging.__table__.columns), (
    "LodgingRow: the table's columns"
)

#: a lodging as the declaration rules read it: the ORM's, or a schedule's row
AnyLodging = Lodging | LodgingRow


class Authorization(AuthorizationColumns, Base):
    __tablename__ = "authorizations"
    #: a lodging's authorizations of one facilitator in one index probe: the schedule's lookup
    #: (``schedules.repository.lodgings_for_facilitator``) asks it for every row, and an index
    #: on ``facilitator_id`` alone matches all of a large intermediary's authorizations
    __table_args__ = (Index("ix_authorizations_lodging_id_facilitator_id", "lodging_id", "facilitator_id"),)


class Certificate(Base):
    """An exemption certificate (PR §24(F) film production) the Company issued."""

    __tablename__ = "certificates"
    certificate_id: Mapped[str] = mapped_column(Text, primary_key=True)
    lodging_id: Mapped[str] = mapped_column(Text, index=True)
    tax_account: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    certificate_number: Mapped[str] = mapped_column(Text, index=True)
    production: Mapped[str] = mapped_column(Text)
    valid_from: Mapped[date] = mapped_column(Date)
    valid_to: Mapped[date] = mapped_column(Date)


class Party(PartyColumns, Base):
    """An operator or facilitator the registry registered: its name, for receipts
    (``roomtax.registry.operator.registered.v1`` / ``facilitator.registered.v1``)."""

    __tablename__ = "parties"


# --------------------------------------------------------------------------- filings


class RemittanceSchedule(Base):
    """One document from an online intermediary for many lodgings and one period."""

    __tablename__ = "remittance_schedules"
    __mapper_args__ = {"eager_defaults": True}
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    seq: Mapped[int] = mapped_column(BigInteger, Identity(), unique=True)
    facilitator_id: Mapped[str] = mapped_column(Text, index=True)
    period: Mapped[str] = mapped_column(Text)
    received_on: Mapped[date] = mapped_column(Date)
    source_format: Mapped[str] = mapped_column(Text)
    rows_total: Mapped[int] = mapped_column(Integer)
    accepted: Mapped[int] = mapped_column(Integer)
    rejected: Mapped[int] = mapped_column(Integer)
    results: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    submitted_by: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class Declaration(Base):
    """One version of one filer's monthly declaration for one lodging.

    ``filing_id`` is stable across the versions of (lodging, period, filer);
    version 1 is the original, each amendment the next version.
    """

    __tablename__ = "declarations"
    __mapper_args__ = {"eager_defaults": True}
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    seq: Mapped[int] = mapped_column(BigInteger, Identity(), unique=True)
    filing_id: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer)
    supersedes: Mapped[str | None] = mapped_column(ForeignKey("declarations.id"))
    lodging_id: Mapped[str] = mapped_column(Text)
    tax_account: Mapped[str] = mapped_column(Text)
    jurisdiction: Mapped[str] = mapped_column(Text)
    lodging_class: Mapped[str] = mapped_column(Text)
    casino: Mapped[bool] = mapped_column(Boolean)
    period: Mapped[str] = mapped_column(Text)
    filer_kind: Mapped[str] = mapped_column(Text)
    filer_id: Mapped[str] = mapped_column(Text)
    #: checked at commit: a schedule writes its declarations before its own row (its results)
    schedule_id: Mapped[str | None] = mapped_column(
        ForeignKey("remittance_schedules.id", deferrable=True, initially="DEFERRED"), index=True
    )
    schedule_row: Mapped[int | None] = mapped_column(Integer)
    filed_on: Mapped[date] = mapped_column(Date)
    due_date: Mapped[date] = mapped_column(Date)
    late: Mapped[bool] = mapped_column(Boolean)
    flagged: Mapped[bool] = mapped_column(Boolean)
    books_kept: Mapped[bool] = mapped_column(Boolean)
    submitted: Mapped[dict[str, Any]] = mapped_column(JSONB)
    input: Mapped[dict[str, Any]] = mapped_column(JSONB)
    gross_receipts: Mapped[Decimal] = mapped_column(Money)
    exempt_total: Mapped[Decimal] = mapped_column(Money)
    taxable_base: Mapped[Decimal] = mapped_column(Money)
    rate: Mapped[Decimal] = mapped_column(Numeric(9, 6))
    tax: Mapped[Decimal] = mapped_column(Money)
    impact_fee: Mapped[Decimal] = mapped_column(Money)
    total_due: Mapped[Decimal] = mapped_column(Money)
    declared_taxable_base: Mapped[Decimal | None] = mapped_column(Money)
    declared_tax: Mapped[Decimal | None] = mapped_column(Money)
    declared_impact_fee: Mapped[Decimal | None] = mapped_column(Money)
    declared_total: Mapped[Decimal | None] = mapped_column(Money)
    declared_line_total: Mapped[Decimal | None] = mapped_column(Money)
    findings: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    trace: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    submitted_by: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (
        UniqueConstraint("filing_id", "version"),
        CheckConstraint("version >= 1", name="version_positive"),
        CheckConstraint("filer_kind IN ('operator', 'facilitator')", name="filer_kind"),
        Index("ix_declarations_tax_account_period", "tax_account", "period"),
        Index("ix_declarations_jurisdiction_period", "jurisdiction", "period"),
        Index("ix_declarations_filer", "filer_kind", "filer_id"),
        # the filer's latest version of a lodging-period (migration 0011_declarations_latest_index)
        Index(
            "ix_declarations_lodging_period_filer",
            "lodging_id",
            "period",
            "filer_kind",
            "filer_id",
            "version",
        ),
    )


# --------------------------------------------------------------------------- payments


class Payment(Base):
    """A payment received for one tax account (PR §28-29; VI §54(f)). Never edited."""

    __tablename__ = "payments"
    __mapper_args__ = {"eager_defaults": True}
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    seq: Mapped[int] = mapped_column(BigInteger, Identity(), unique=True)
    lodging_id: Mapped[str] = mapped_column(Text, index=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Money)
    method: Mapped[str] = mapped_column(Text)
    reference: Mapped[str | None] = mapped_column(Text)
    received_on: Mapped[date] = mapped_column(Date)
    payer_kind: Mapped[str] = mapped_column(Text)
    payer_id: Mapped[str] = mapped_column(Text)
    periods: Mapped[list[dict[str, str]]] = mapped_column(JSONB)
    verification_code: Mapped[str] = mapped_column(Text, unique=True)
    submitted_by: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (
        CheckConstraint("amount > 0", name="amount_positive"),
        Index("ix_payments_payer", "payer_kind", "payer_id"),
    )


class PaymentReversal(Base):
    """A payment undone (a bounced check): a new record referencing the original, once."""

    __tablename__ = "payment_reversals"
    __mapper_args__ = {"eager_defaults": True}
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    payment_id: Mapped[str] = mapped_column(ForeignKey("payments.id"), unique=True)
    tax_account: Mapped[str] = mapped_column(Text)
    jurisdiction: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Money)
    reversed_on: Mapped[date] = mapped_column(Date)
    reason: Mapped[str] = mapped_column(Text)
    submitted_by: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


APPEND_ONLY = ("declarations", "remittance_schedules", "payments", "payment_reversals")
