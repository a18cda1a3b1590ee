"""Case-work tables: adjustment facts, maker-checker proposals, cases, abatements.

Every table here is append-only: a proposal is reviewed by a new row (one per
proposal), a case moves by a new step, a write-off is reversed by a new row.
State (a case's status, a proposal's outcome) is read from the rows, never
stored twice. The balance effect of case work is only in ``adjustment_facts``,
which the ledger hands to taxcore (``AccountHistory.adjustments``).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, Date, Index, Sequence, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from assessment.models import Base
from servicekit.db import Created, Money, new_id

#: One sequence over every case-work row: the order things were written, across tables and
#: within one transaction (``created_at`` is the transaction's start time).
CASEWORK_SEQ = Sequence("casework_seq", metadata=Base.metadata)


class Sequenced:
    __mapper_args__ = {"eager_defaults": True}  # noqa: RUF012 - SQLAlchemy reads it from the class
    seq: Mapped[int] = mapped_column(BigInteger, CASEWORK_SEQ, server_default=CASEWORK_SEQ.next_value())


class AdjustmentFact(Created, Sequenced, Base):
    """An approved change of what a period owes (taxcore ``AdjustmentIn``); one per source."""

    __tablename__ = "adjustment_facts"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)  # reduce | cancel | abate | write_off | returned_payment_fee
    component: Mapped[str | None] = mapped_column(Text)
    amount: Mapped[Decimal | None] = mapped_column(Money)
    effective_on: Mapped[date] = mapped_column(Date)
    section: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    proposed_by: Mapped[str | None] = mapped_column(Text)
    approved_by: Mapped[str] = mapped_column(Text)
    source_kind: Mapped[str] = mapped_column(Text)  # case | abatement | write_off | reversal
    source_id: Mapped[str] = mapped_column(Text)
    __table_args__ = (
        UniqueConstraint(
            "source_kind", "source_id", "period", "kind", "component", postgresql_nulls_not_distinct=True
        ),
        CheckConstraint("amount IS NULL OR amount >= 0", name="amount_not_negative"),
    )


class AdjustmentReversal(Created, Sequenced, Base):
    """A write-off reversed (money appeared): from ``reversed_on`` the amounts are owed again."""

    __tablename__ = "adjustment_reversals"
    fact_id: Mapped[str] = mapped_column(Text, primary_key=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    reversed_on: Mapped[date] = mapped_column(Date)
    reason: Mapped[str] = mapped_column(Text)
    proposed_by: Mapped[str | None] = mapped_column(Text)
    approved_by: Mapped[str] = mapped_column(Text)


class Proposal(Created, Sequenced, Base):
    """Maker: one agency person proposes an action that lowers what is owed or pays money out."""

    __tablename__ = "proposals"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    period: Mapped[str | None] = mapped_column(Text)
    action: Mapped[str] = mapped_column(Text)
    subject_id: Mapped[str] = mapped_column(Text, index=True)
    amount: Mapped[Decimal] = mapped_column(Money)  # what it lowers or pays out (approval threshold)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB)
    proposed_by: Mapped[str] = mapped_column(Text)  # the person's user id
    proposed_role: Mapped[str] = mapped_column(Text)
    proposed_on: Mapped[date] = mapped_column(Date)
    __table_args__ = (CheckConstraint("amount >= 0", name="amount_not_negative"),)


class ProposalReview(Created, Sequenced, Base):
    """Checker: another agency person approves or rejects (at most one review per proposal)."""

    __tablename__ = "proposal_reviews"
    proposal_id: Mapped[str] = mapped_column(Text, primary_key=True)
    outcome: Mapped[str] = mapped_column(Text)  # approved | rejected
    reviewed_by: Mapped[str] = mapped_column(Text)
    reviewed_role: Mapped[str] = mapped_column(Text)
    reviewed_on: Mapped[date] = mapped_column(Date)
    note: Mapped[str | None] = mapped_column(Text)


class Case(Created, Base):
    """A dispute of a deficiency notice, from filing to decision (PR §13-§15, §34; VI §54(d))."""

    __tablename__ = "cases"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    notice_id: Mapped[str] = mapped_column(Text, unique=True)
    response_id: Mapped[str] = mapped_column(Text, unique=True)
    disputed_amount: Mapped[Decimal] = mapped_column(Money)
    opened_on: Mapped[date] = mapped_column(Date)
    opened_by: Mapped[str] = mapped_column(Text)


class CaseStep(Created, Sequenced, Base):
    """One step of a case's timeline (filed, under_review, hearing_scheduled, decided, appealed, ...)."""

    __tablename__ = "case_steps"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    case_id: Mapped[str] = mapped_column(Text)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    step: Mapped[str] = mapped_column(Text)
    on: Mapped[date] = mapped_column(Date)
    by: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB)
    __table_args__ = (Index("ix_case_steps_case", "case_id", "seq"),)


class AbatementRequest(Created, Sequenced, Base):
    """A request to abate a period's penalty, interest or fine, by the taxpayer or the agency."""

    __tablename__ = "abatement_requests"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    component: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Money)
    ground: Mapped[str] = mapped_column(Text)  # reasonable_cause | agency_error
    explanation: Mapped[str] = mapped_column(Text)
    requested_on: Mapped[date] = mapped_column(Date)
    requested_by: Mapped[str] = mapped_column(Text)
    __table_args__ = (CheckConstraint("amount > 0", name="amount_positive"),)


class FacilitatorAuthorization(Base):
    """Projection of registry authorizations: which facilitator a lodging authorized, and until when."""

    __tablename__ = "facilitator_authorizations"
    authorization_id: Mapped[str] = mapped_column(Text, primary_key=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    facilitator_id: Mapped[str] = mapped_column(Text, index=True)
    starts_on: Mapped[date] = mapped_column(Date)
    ends_on: Mapped[date | None] = mapped_column(Date)
    ended: Mapped[bool] = mapped_column(default=False)


class AbatementDecision(Created, Sequenced, Base):
    """An abatement request decided (once): denied by one person, or full/partial as approved."""

    __tablename__ = "abatement_decisions"
    abatement_id: Mapped[str] = mapped_column(Text, primary_key=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    outcome: Mapped[str] = mapped_column(Text)  # full | partial | deny
    amount: Mapped[Decimal] = mapped_column(Money)
    reasons: Mapped[str] = mapped_column(Text)
    decided_on: Mapped[date] = mapped_column(Date)
    decided_by: Mapped[str] = mapped_column(Text)
    proposed_by: Mapped[str | None] = mapped_column(Text)


class RefundStep(Created, Sequenced, Base):
    """One step of a refund after its request: under_review, approved, denied, paid.

    Only a ``paid`` step (the disbursement: method, reference, date) takes money out of
    the account; an approved refund not yet paid leaves the credit where it is.
    """

    __tablename__ = "refund_steps"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    refund_id: Mapped[str] = mapped_column(Text, index=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    step: Mapped[str] = mapped_column(Text)
    on: Mapped[date] = mapped_column(Date)
    by: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB)
    __table_args__ = (Index("uq_refund_steps_final", "refund_id", "step", unique=True),)
