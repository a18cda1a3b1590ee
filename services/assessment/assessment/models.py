"""Assessment tables.

Facts are append-only: liabilities (one row per filing version), estimated
assessments, payments, payment reversals, notices and their responses, bond
draw requests, refunds and collection postings are inserted, never updated or
deleted; a correction is a new row (an amendment supersedes a version, a
declaration supersedes an estimate, a reversal undoes a payment, a negative
posting undoes part of an earlier one). Balances are never stored as facts:
they are computed by taxcore from these rows for any date.

Two kinds of rows are not facts and are kept current: the projections of the
registry (``lodgings``, ``bonds``, ``bond_draws``) and ``account_summaries``,
a cache of every account's balance as of its last refresh for the dashboards.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from servicekit.db import Created, Money, make_metadata, new_id
from servicekit.projections import LodgingColumns, PaymentColumns


class Base(DeclarativeBase):
    metadata = make_metadata()


# --------------------------------------------------------------------------- registry projection


class LodgingView(LodgingColumns, Base):
    """The registry's lodging snapshot (topic ``registry.lodgings``), latest wins."""

    __tablename__ = "lodgings"
    tax_account: Mapped[str] = mapped_column(Text, primary_key=True)
    lodging_id: Mapped[str] = mapped_column(Text, index=True)
    municipality: Mapped[str] = mapped_column(Text)
    room_count: Mapped[int] = mapped_column(Integer)
    #: mailing address of official documents (``taxcore.events.registry.MailingAddress`` as JSON)
    address: Mapped[dict[str, Any] | None] = mapped_column(JSONB, nullable=True)
    #: en/es; None: the jurisdiction's default language (servicekit.documents.language_for)
    preferred_language: Mapped[str | None] = mapped_column(Text, nullable=True)
    snapshot_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class BondView(Base):
    """A PR §27 bond as the registry last described it."""

    __tablename__ = "bonds"
    bond_id: Mapped[str] = mapped_column(Text, primary_key=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    kind: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Money)
    effective_on: Mapped[date] = mapped_column(Date)
    expires_on: Mapped[date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(Text)
    snapshot_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class BondDrawView(Base):
    __tablename__ = "bond_draws"
    draw_id: Mapped[str] = mapped_column(Text, primary_key=True)
    bond_id: Mapped[str] = mapped_column(Text, index=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    amount: Mapped[Decimal] = mapped_column(Money)
    drawn_on: Mapped[date] = mapped_column(Date)
    request_event_id: Mapped[str | None] = mapped_column(Text)


# --------------------------------------------------------------------------- facts


class Liability(Created, Base):
    """One version of one filer's declaration for a lodging-period, recomputed by taxcore."""

    __tablename__ = "liabilities"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    declaration_id: Mapped[str] = mapped_column(Text, unique=True)
    filing_id: Mapped[str] = mapped_column(Text, index=True)
    version: Mapped[int] = mapped_column(Integer)
    supersedes: Mapped[str | None] = mapped_column(Text)
    tax_account: Mapped[str] = mapped_column(Text)
    lodging_id: Mapped[str] = mapped_column(Text)
    jurisdiction: Mapped[str] = mapped_column(Text)
    lodging_class: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    filer_kind: Mapped[str] = mapped_column(Text)
    filer_id: Mapped[str] = mapped_column(Text)
    filed_on: Mapped[date] = mapped_column(Date)
    books_kept: Mapped[bool] = mapped_column(Boolean)
    input: Mapped[dict[str, Any]] = mapped_column(JSONB)
    taxable_base: Mapped[Decimal] = mapped_column(Money)
    tax: Mapped[Decimal] = mapped_column(Money)
    impact_fee: Mapped[Decimal] = mapped_column(Money)
    declared_tax: Mapped[Decimal | None] = mapped_column(Money)
    declared_total: Mapped[Decimal | None] = mapped_column(Money)
    deficiency: Mapped[Decimal] = mapped_column(Money)
    deficiency_reason: Mapped[str | None] = mapped_column(Text)
    findings: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    trace: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    event_id: Mapped[str] = mapped_column(Text)
    __table_args__ = (
        UniqueConstraint("filing_id", "version"),
        Index("ix_liabilities_account_period", "tax_account", "period"),
    )


class Estimate(Created, Base):
    """An estimated assessment of a non-filer (PR §32; VI §54(d)); superseded by a declaration."""

    __tablename__ = "estimates"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    raised_on: Mapped[date] = mapped_column(Date)
    jurisdiction: Mapped[str] = mapped_column(Text)
    lodging_class: Mapped[str] = mapped_column(Text)
    taxable_base: Mapped[Decimal] = mapped_column(Money)
    tax: Mapped[Decimal] = mapped_column(Money)
    impact_fee: Mapped[Decimal] = mapped_column(Money)
    method: Mapped[str] = mapped_column(Text)
    trace: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    __table_args__ = (UniqueConstraint("tax_account", "period"),)


class Payment(PaymentColumns, Created, Base):
    __tablename__ = "payments"
    designations: Mapped[list[dict[str, str]]] = mapped_column(JSONB)
    source: Mapped[str] = mapped_column(Text)  # filing | bond_draw
    __table_args__ = (CheckConstraint("amount > 0", name="amount_positive"),)


class PaymentReversal(Created, Base):
    __tablename__ = "payment_reversals"
    reversal_id: Mapped[str] = mapped_column(Text, primary_key=True)
    payment_id: Mapped[str] = mapped_column(Text, index=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    amount: Mapped[Decimal] = mapped_column(Money)
    reversed_on: Mapped[date] = mapped_column(Date)
    reason: Mapped[str] = mapped_column(Text)
    __table_args__ = (CheckConstraint("amount > 0", name="amount_positive"),)


class Notice(Created, Base):
    """A Notification of a Deficiency (PR §2(25), §33), with the amounts as of issue."""

    __tablename__ = "notices"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)  # deficiency | clerical_error
    reason: Mapped[str] = mapped_column(Text)
    section: Mapped[str] = mapped_column(Text)
    issued_on: Mapped[date] = mapped_column(Date)
    response_deadline: Mapped[date] = mapped_column(Date)
    tax: Mapped[Decimal] = mapped_column(Money)
    impact_fee: Mapped[Decimal] = mapped_column(Money)
    penalty: Mapped[Decimal] = mapped_column(Money)
    interest: Mapped[Decimal] = mapped_column(Money)
    fine: Mapped[Decimal] = mapped_column(Money)
    total: Mapped[Decimal] = mapped_column(Money)
    source_declaration_id: Mapped[str | None] = mapped_column(Text, unique=True)
    issued_by: Mapped[str] = mapped_column(Text)


class NoticeResponse(Created, Base):
    __tablename__ = "notice_responses"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    notice_id: Mapped[str] = mapped_column(Text, index=True)
    kind: Mapped[str] = mapped_column(Text)  # accept | dispute
    disputed_amount: Mapped[Decimal] = mapped_column(Money)
    undisputed_amount: Mapped[Decimal] = mapped_column(Money)
    statement: Mapped[str | None] = mapped_column(Text)
    responded_on: Mapped[date] = mapped_column(Date)
    responder: Mapped[str] = mapped_column(Text)


class BondDrawRequest(Created, Base):
    """PR §33: a notice lapsed unpaid; the draw was asked of the registry (once per notice)."""

    __tablename__ = "bond_draw_requests"
    notice_id: Mapped[str] = mapped_column(Text, primary_key=True)
    event_id: Mapped[str] = mapped_column(Text, unique=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    period: Mapped[str] = mapped_column(Text)
    bond_id: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Money)
    requested_on: Mapped[date] = mapped_column(Date)


class Refund(Created, Base):
    """A refund of credit requested within the PR §42 limits."""

    __tablename__ = "refunds"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    amount: Mapped[Decimal] = mapped_column(Money)
    requested_on: Mapped[date] = mapped_column(Date)
    requested_by: Mapped[str] = mapped_column(Text)
    __table_args__ = (CheckConstraint("amount > 0", name="amount_positive"),)


class CollectionPosting(Created, Base):
    """What was emitted as ``collection.posted``: deltas per payment, period and component."""

    __tablename__ = "collection_postings"
    posting_id: Mapped[str] = mapped_column(Text, primary_key=True)
    payment_id: Mapped[str] = mapped_column(Text, index=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    period: Mapped[str] = mapped_column(Text)
    component: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Money)
    collected_on: Mapped[date] = mapped_column(Date)
    section: Mapped[str] = mapped_column(Text)


# --------------------------------------------------------------------------- read model


class AccountSummary(Base):
    """Balance of one account (lodging, period) as of ``as_of``, refreshed when its facts change."""

    __tablename__ = "account_summaries"
    tax_account: Mapped[str] = mapped_column(Text, primary_key=True)
    period: Mapped[str] = mapped_column(Text, primary_key=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    lodging_class: Mapped[str] = mapped_column(Text)
    operator_id: Mapped[str | None] = mapped_column(Text)
    due_date: Mapped[date] = mapped_column(Date)
    basis: Mapped[str] = mapped_column(Text)
    principal: Mapped[Decimal] = mapped_column(Money)
    total_assessed: Mapped[Decimal] = mapped_column(Money)
    total_paid: Mapped[Decimal] = mapped_column(Money)
    balance: Mapped[Decimal] = mapped_column(Money)
    as_of: Mapped[date] = mapped_column(Date)
    #: what the balance figures were computed from (``BalanceCache.digest``; null: a settled
    #: period's balance on its last payment's day): the same digest, the same figures
    balance_digest: Mapped[bytes | None] = mapped_column(LargeBinary)
    #: when the row last changed (a recomputation that finds it the same leaves it)
    refreshed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (
        Index("ix_account_summaries_aging", "jurisdiction", "lodging_class", "due_date"),
        Index("ix_account_summaries_balance", "balance"),
    )
