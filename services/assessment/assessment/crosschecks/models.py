"""Cross-check tables: every run over a lodging-period and the findings it recorded (append-only).

A run is keyed by the operator's declaration version and the set of intermediary versions it
compared, so a redelivered event or a replay records nothing twice; a later version (an
amendment, a new schedule) is a new run with its own findings. The findings shown for a
lodging-period are those of its latest run.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import Date, ForeignKey, Integer, Numeric, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from assessment.casework.models import Sequenced
from assessment.models import Base
from servicekit.db import Created, new_id


class CrosscheckRun(Created, Sequenced, Base):
    __tablename__ = "crosscheck_runs"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    period: Mapped[str] = mapped_column(Text)
    declaration_id: Mapped[str] = mapped_column(Text, index=True)  # the operator's version checked
    intermediary_declarations: Mapped[list[str]] = mapped_column(JSONB)
    intermediaries_key: Mapped[str] = mapped_column(Text)
    checked_on: Mapped[date] = mapped_column(Date)
    findings: Mapped[int] = mapped_column(Integer)
    __table_args__ = (UniqueConstraint("declaration_id", "intermediaries_key"),)


class CrosscheckFinding(Created, Sequenced, Base):
    __tablename__ = "crosscheck_findings"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    run_id: Mapped[str] = mapped_column(ForeignKey("crosscheck_runs.id"), index=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    period: Mapped[str] = mapped_column(Text)
    declaration_id: Mapped[str] = mapped_column(Text, index=True)
    rule: Mapped[str] = mapped_column(Text)
    line: Mapped[str] = mapped_column(Text)
    message: Mapped[str] = mapped_column(Text)
    declared: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    reported: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    difference: Mapped[Decimal] = mapped_column(Numeric(18, 2))
    section: Mapped[str] = mapped_column(Text)
    parameters: Mapped[dict[str, Any]] = mapped_column(JSONB)
