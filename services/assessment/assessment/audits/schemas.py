"""Audit API models."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from assessment.rows import from_row
from taxcore.lines import ReturnLines
from taxcore.money import SignedMoney

if TYPE_CHECKING:
    from assessment.audits.models import AuditStep
    from assessment.audits.service import AuditView

PeriodStr = Annotated[str, StringConstraints(pattern=r"^\d{4}-(0[1-9]|1[0-2])$")]

#: what a records request asks for unless the auditor lists otherwise (PR §3(E), §9)
DEFAULT_RECORDS: tuple[str, ...] = (
    "guest folios and the room revenue report for each period",
    "statements of every online intermediary and agent that collected rent for the lodging",
    "bank statements showing the deposits of room receipts",
    "certificates supporting every exempt amount",
)


class AuditCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tax_account: str = Field(min_length=1, max_length=100)
    periods: list[PeriodStr] = Field(min_length=1, max_length=36)
    reason: str = Field(min_length=1, max_length=2000)
    source: Literal["risk_score", "crosscheck", "manual"] = "manual"


class RecordsRequestCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    due_on: date | None = Field(default=None, description="default: today + audits.records_due_days")
    records: list[Annotated[str, StringConstraints(min_length=1, max_length=500)]] = Field(
        default_factory=lambda: list(DEFAULT_RECORDS), min_length=1, max_length=20
    )


class CorrectedLines(ReturnLines):
    """The base as the records show it (taxcore ``DeclarationInput`` lines)."""


class AuditFindingCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    period: PeriodStr
    lines: CorrectedLines
    note: str = Field(min_length=1, max_length=4000)


class AuditClose(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcome: Literal["no_change", "assessed", "agreed"]
    note: str = Field(min_length=1, max_length=4000)


class StepOut(BaseModel):
    kind: str
    period: str | None
    data: dict[str, Any]
    recorded_on: date
    recorded_by: str
    recorded_at: datetime

    @classmethod
    def of(cls, s: AuditStep) -> StepOut:
        return from_row(cls, s, recorded_at=s.created_at)


class AuditOut(BaseModel):
    id: str
    tax_account: str
    jurisdiction: str
    periods: list[str]
    reason: str
    source: str
    section: str
    opened_on: date
    opened_by: str
    status: Literal["open", "records_requested", "findings_recorded", "notice_issued", "closed"]
    records_due_on: date | None
    findings: dict[str, dict[str, Any]] = Field(description="the latest finding of each period")
    notice: dict[str, Any] | None
    closed: dict[str, Any] | None
    steps: list[StepOut]

    @classmethod
    def of(cls, current: AuditView) -> AuditOut:
        """The audit, where its steps leave it, and the latest finding of each period."""
        a = current.audit
        request = current.records_request
        closed = current.closed
        notice = current.notice
        findings = {
            p: {**s.data, "recorded_on": s.recorded_on.isoformat(), "recorded_by": s.recorded_by}
            for p, s in current.findings().items()
        }
        return from_row(
            cls,
            a,
            status=current.status,
            records_due_on=request.data["due_on"] if request else None,
            findings=findings,
            notice=notice.data if notice else None,
            closed={**closed.data, "closed_on": closed.recorded_on.isoformat()} if closed else None,
            steps=[StepOut.of(s) for s in current.steps],
        )


class RecordsLetter(BaseModel):
    """The records request letter's content (PR §3(E), §9, §10; VI §54(d))."""

    agency: str
    audit_id: str
    tax_account: str
    lodging: str | None
    municipality: str | None
    periods: list[str]
    dated: date
    due_on: date
    records: list[str]
    section: str
    text: str


class ProposedOut(BaseModel):
    audit_id: str
    periods: list[dict[str, Any]] = Field(
        description="per period: filed, corrected, difference per component"
    )
    additional_tax: SignedMoney
    section: str
