"""Audit tables: the audit (its scope) and its steps, append-only.

An audit's state (records requested, findings per period, notice, closure) is read from its
steps in write order; nothing is updated. A finding for a period supersedes an earlier
finding for the same period (the auditor corrected the correction), as the latest step.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import Date, ForeignKey, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from assessment.casework.models import Sequenced
from assessment.models import Base
from servicekit.db import Created, new_id


class Audit(Created, Sequenced, Base):
    __tablename__ = "audits"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    periods: Mapped[list[str]] = mapped_column(JSONB)
    reason: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text)  # risk_score | crosscheck | manual
    opened_on: Mapped[date] = mapped_column(Date)
    opened_by: Mapped[str] = mapped_column(Text)
    section: Mapped[str] = mapped_column(Text)


class AuditStep(Created, Sequenced, Base):
    __tablename__ = "audit_steps"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    audit_id: Mapped[str] = mapped_column(ForeignKey("audits.id"), index=True)
    kind: Mapped[str] = mapped_column(Text)  # records_requested | finding | notice | closed
    period: Mapped[str | None] = mapped_column(Text)
    data: Mapped[dict[str, Any]] = mapped_column(JSONB)
    recorded_on: Mapped[date] = mapped_column(Date)
    recorded_by: Mapped[str] = mapped_column(Text)
