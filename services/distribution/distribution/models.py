"""Distribution tables: a double-entry, append-only ledger and what produced each entry.

Signs: a journal line's ``amount`` is positive for a debit, negative for a
credit; the lines of one entry sum to zero (statement triggers).
Cash is debit-normal; pending collections, funds, other receipts and suspense
are credit-normal (what the jurisdiction owes to each destination). Every table
here refuses UPDATE and DELETE (triggers in the first migration): a correction
is a new, reversing entry.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
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
    Numeric,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from servicekit.db import make_metadata, new_id


class Base(DeclarativeBase):
    metadata = make_metadata()


class Account(Base):
    """A ledger account: ``cash:PR``, ``pending:PR``, ``fund:pr_convention_bureau``, ``other:VI``..."""

    __tablename__ = "accounts"
    code: Mapped[str] = mapped_column(Text, primary_key=True)
    jurisdiction: Mapped[str] = mapped_column(Text, index=True)
    kind: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
    section: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (
        CheckConstraint("kind IN ('cash', 'pending', 'fund', 'other', 'suspense')", name="kind_known"),
    )


class Run(Base):
    """A posted monthly distribution run (previews are never stored)."""

    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    jurisdiction: Mapped[str] = mapped_column(Text)
    month: Mapped[str] = mapped_column(Text)
    fiscal_year: Mapped[int] = mapped_column(Integer)
    closed_through: Mapped[date] = mapped_column(Date)
    collected: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    collected_in_month: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    released: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    pending: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    certification_id: Mapped[str | None] = mapped_column(ForeignKey("certifications.id"))
    inputs: Mapped[dict[str, Any]] = mapped_column(JSONB)
    allocations: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    state: Mapped[dict[str, Any]] = mapped_column(JSONB)
    trace: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    posted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (UniqueConstraint("jurisdiction", "month"),)


class JournalEntry(Base):
    """A journal entry, as the view ``journal_entries`` shows it: the stored entries (table
    ``stored_journal_entries``: runs, reversals, collections booked before their entries were
    derived) and one entry per collection row with ``entry_derived`` (migration
    0010_derived_collection_entries). Read it; write entries into ``stored_journal_entries`` (or
    through the view, whose rule does that)."""

    __tablename__ = "journal_entries"
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    jurisdiction: Mapped[str] = mapped_column(Text, index=True)
    kind: Mapped[str] = mapped_column(Text)
    effective_on: Mapped[date] = mapped_column(Date, index=True)
    description: Mapped[str] = mapped_column(Text)
    event_id: Mapped[str | None] = mapped_column(Text, unique=True)
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id"))
    reverses_entry_id: Mapped[int | None] = mapped_column(ForeignKey("journal_entries.id"))
    posted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (
        CheckConstraint("kind IN ('collection', 'run', 'reversal')", name="kind_known"),
        CheckConstraint(
            "(kind = 'collection' AND event_id IS NOT NULL) OR (kind = 'run' AND run_id IS NOT NULL) "
            "OR (kind = 'reversal' AND reverses_entry_id IS NOT NULL)",
            name="references_its_origin",
        ),
        # unique among the entries that have one (a collection's entry adds no index entry)
        Index("uq_journal_entries_run_id", "run_id", unique=True, postgresql_where="run_id IS NOT NULL"),
        Index(
            "uq_journal_entries_reverses_entry_id",
            "reverses_entry_id",
            unique=True,
            postgresql_where="reverses_entry_id IS NOT NULL",
        ),
    )


class JournalLine(Base):
    """A journal line, as the view ``journal_lines`` shows it: the stored lines (table
    ``stored_journal_lines``: runs, reversals, collections booked before their lines were
    derived) and the two lines derived from each collection row with ``lines_derived`` (migration
    0009_derived_collection_lines). Read it; write lines into ``stored_journal_lines`` (or through
    the view, whose rule does that). A stored line's ``entry_id`` and ``account_code`` refer to
    an entry and an account that exist: checked when each statement ends (trigger
    ``journal_lines_refer``), not by row foreign keys."""

    __tablename__ = "journal_lines"
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    entry_id: Mapped[int] = mapped_column(BigInteger, index=True)
    account_code: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    rule: Mapped[str | None] = mapped_column(Text)
    section: Mapped[str | None] = mapped_column(Text)
    __table_args__ = (CheckConstraint("amount <> 0", name="amount_nonzero"),)


class Collection(Base):
    """One ``collection.posted`` event: cents of a payment applied to a component (a delta).

    ``entry_id`` refers to an entry that exists (trigger ``collections_refer``). With
    ``lines_derived`` the row is also its entry's two lines (view ``journal_lines``): debit
    ``cash:<jurisdiction>`` ``amount`` citing ``section``, credit ``pending:<jurisdiction>`` the
    same, citing ``pending_section``; the trigger checks both accounts exist. With
    ``entry_derived`` it is also the entry itself (view ``journal_entries``: id ``entry_id``,
    kind ``collection``, effective on ``collected_on``, ``event_id``, a description written from
    the row by the view ``collection_entries`` unless the row stored one)."""

    __tablename__ = "collections"
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    # identifiers compared as bytes (migration 0014_identifiers_collate_c)
    posting_id: Mapped[str] = mapped_column(Text(collation="C"), unique=True)
    # not unique: the inbox (same transaction) and posting_id keep an event from booking twice
    # (migration 0012_event_id_not_unique)
    event_id: Mapped[str] = mapped_column(Text)
    payment_id: Mapped[str] = mapped_column(Text)
    tax_account: Mapped[str] = mapped_column(Text(collation="C"))
    jurisdiction: Mapped[str] = mapped_column(Text)
    lodging_class: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    component: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    collected_on: Mapped[date] = mapped_column(Date)
    section: Mapped[str] = mapped_column(Text)
    entry_id: Mapped[int] = mapped_column(BigInteger, index=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    pending_section: Mapped[str | None] = mapped_column(Text)
    lines_derived: Mapped[bool] = mapped_column(Boolean, server_default="true")
    # stored by the rows booked before 0013_derived_descriptions; since, the view
    # ``collection_entries`` writes it from the row's columns
    description: Mapped[str | None] = mapped_column(Text)
    entry_derived: Mapped[bool] = mapped_column(Boolean, server_default="false")
    refund_id: Mapped[str | None] = mapped_column(Text)  # a give-back: the paid refund
    __table_args__ = (
        CheckConstraint("amount <> 0", name="amount_nonzero"),
        CheckConstraint("NOT entry_derived OR lines_derived", name="entry_with_lines"),
        # a jurisdiction's, a lodging's entries in id order (migration 0010_derived_collection_entries)
        Index("ix_collections_jurisdiction_entry_id", "jurisdiction", "entry_id"),
        Index("ix_collections_tax_account_entry_id", "tax_account", "entry_id"),
    )


class RunCollection(Base):
    """Which run distributed a collection (each collection at most once)."""

    __tablename__ = "run_collections"
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id"), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)


class Certification(Base):
    """PR §31(A): the Bank's certified debt-service amount for a fiscal year; corrections are new versions."""

    __tablename__ = "certifications"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    jurisdiction: Mapped[str] = mapped_column(Text)
    fiscal_year: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer)
    amount: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    certified_on: Mapped[date] = mapped_column(Date)
    document_reference: Mapped[str] = mapped_column(Text)
    first_year_months_remaining: Mapped[int | None] = mapped_column(Integer)
    supersedes_id: Mapped[str | None] = mapped_column(ForeignKey("certifications.id"), unique=True)
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (
        UniqueConstraint("jurisdiction", "fiscal_year", "version"),
        CheckConstraint("amount >= 0", name="amount_nonnegative"),
        CheckConstraint(
            "first_year_months_remaining IS NULL OR first_year_months_remaining BETWEEN 1 AND 12",
            name="months_remaining_range",
        ),
    )


class OpeningState(Base):
    """Go-live: what each fund received in a fiscal year before the first run (declared by the agency).

    One per jurisdiction; a correction (before the first run) is a new version that names
    the one it supersedes. ``entered_by`` is the principal's actor, ``created_at`` when.
    """

    __tablename__ = "opening_states"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    jurisdiction: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer)
    fiscal_year: Mapped[int] = mapped_column(Integer)
    through_month: Mapped[str] = mapped_column(Text)
    transferred: Mapped[dict[str, str]] = mapped_column(JSONB)
    document_reference: Mapped[str] = mapped_column(Text)
    supersedes_id: Mapped[str | None] = mapped_column(ForeignKey("opening_states.id"), unique=True)
    reason: Mapped[str | None] = mapped_column(Text)
    entered_by: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    __table_args__ = (UniqueConstraint("jurisdiction", "version"),)
