"""Payment plan tables (installment agreements): append-only, like every case-work table.

A plan is granted once with its schedule (``plan_installments``; number 0 is the down
payment) and never edited; what happens to it afterwards (an installment paid, or unpaid
again by a returned payment, the plan completed, reopened or defaulted, a request declined)
is a new ``plan_steps`` row, one per ``(subject_id, key)``, so the job that records them can
run any number of times. Whether
a plan is current on a date is computed from its schedule and the account's payments
(``plans.schedule``), never stored.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import CheckConstraint, Date, Integer, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from assessment.casework.models import Sequenced
from assessment.models import Base
from servicekit.db import Created, Money, new_id


class PaymentPlan(Created, Sequenced, Base):
    """An installment agreement for the balance of some periods of an account as of a date."""

    __tablename__ = "payment_plans"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    periods: Mapped[list[str]] = mapped_column(JSONB)
    balance_as_of: Mapped[date] = mapped_column(Date)
    planned_amount: Mapped[Decimal] = mapped_column(Money)
    granted_on: Mapped[date] = mapped_column(Date)
    granted_by: Mapped[str] = mapped_column(Text)
    request_id: Mapped[str | None] = mapped_column(Text, unique=True)
    grace_days: Mapped[int] = mapped_column(Integer)
    section: Mapped[str] = mapped_column(Text)
    __table_args__ = (CheckConstraint("planned_amount > 0", name="amount_positive"),)


class PlanInstallment(Base):
    """One installment of a plan's schedule (number 0: the down payment)."""

    __tablename__ = "plan_installments"
    plan_id: Mapped[str] = mapped_column(Text, primary_key=True)
    number: Mapped[int] = mapped_column(Integer, primary_key=True)
    due_on: Mapped[date] = mapped_column(Date)
    amount: Mapped[Decimal] = mapped_column(Money)
    __table_args__ = (CheckConstraint("amount > 0", name="amount_positive"),)


class PlanRequest(Created, Sequenced, Base):
    """A taxpayer asks for a plan; it waits in the agency's queue until granted or declined."""

    __tablename__ = "plan_requests"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    installments: Mapped[int] = mapped_column(Integer)
    explanation: Mapped[str] = mapped_column(Text)
    requested_on: Mapped[date] = mapped_column(Date)
    requested_by: Mapped[str] = mapped_column(Text)


class PlanStep(Created, Sequenced, Base):
    """Something that happened to a plan or a request: installment_paid:<n>,
    installment_reopened:<n>:<cycle> (then installment_paid:<n>:<cycle>), completed, reopened:<cycle>
    (then completed:<cycle>), defaulted, declined (``key`` is unique per subject, so each is
    recorded once)."""

    __tablename__ = "plan_steps"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    subject_id: Mapped[str] = mapped_column(Text)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    key: Mapped[str] = mapped_column(Text)
    step: Mapped[str] = mapped_column(Text)
    on: Mapped[date] = mapped_column(Date)
    by: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB)
    __table_args__ = (UniqueConstraint("subject_id", "key"),)
