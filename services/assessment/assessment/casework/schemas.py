"""API models of case work (proposals, cases, abatements, the account timeline)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from assessment.rows import from_row
from taxcore.money import Money

if TYPE_CHECKING:
    from assessment.casework.models import Proposal, ProposalReview
    from assessment.settings import AssessmentSettings


class ReviewCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str | None = Field(default=None, max_length=5000)


class ProposalOut(BaseModel):
    id: str
    tax_account: str
    period: str | None
    action: str
    subject_id: str
    amount: Money
    payload: dict[str, Any]
    proposed_by: str
    proposed_on: date
    admin_approval_required: bool
    status: Literal["pending", "approved", "rejected"]
    reviewed_by: str | None
    reviewed_on: date | None
    note: str | None

    @classmethod
    def of(
        cls, proposal: Proposal, review: ProposalReview | None, settings: AssessmentSettings
    ) -> ProposalOut:
        """The proposal as it stands: pending until its one review row exists."""
        return from_row(
            cls,
            proposal,
            admin_approval_required=settings.needs_admin(proposal.amount),
            status="pending" if review is None else review.outcome,
            reviewed_by=review.reviewed_by if review else None,
            reviewed_on=review.reviewed_on if review else None,
            note=review.note if review else None,
        )


class WorkStepOut(BaseModel):
    """A step of a case, a plan or a refund as its row records it (who, when, what details)."""

    model_config = ConfigDict(from_attributes=True)
    step: str
    on: date
    by: str
    details: dict[str, Any]


class TimelineEntry(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    on: date
    kind: str = Field(description="what happened, e.g. case.filed, proposal.made, adjustment.abate")
    subject_id: str
    period: str | None
    by: str | None
    amount: Money | None
    section: str | None
    summary: str
    note: str | None = Field(
        default=None, description="what a person wrote (a reason, a note), apart from the summary's words"
    )


class Timeline(BaseModel):
    tax_account: str
    entries: list[TimelineEntry]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Written(Protocol):
    """A stored fact: when it was written (``Created``); a case-work row also has its place in
    the write order (``Sequenced.seq``)."""

    @property
    def created_at(self) -> datetime: ...


@dataclass(frozen=True, kw_only=True)
class Happened:
    """One timeline entry as a domain reports it (read as a :class:`TimelineEntry`), with when
    it was written: entries of one day are shown in write order."""

    on: date
    kind: str
    subject_id: str
    summary: str
    period: str | None = None
    by: str | None = None
    amount: Decimal | None = None
    section: str | None = None
    written: datetime | None = None
    seq: int = 0
    note: str | None = None  # what a person wrote (a reason, a note), apart from the summary

    @classmethod
    def of_row(cls, row: Written, **entry: Any) -> Happened:
        """The entry of a stored row, written when the row was (and in the case-work write order)."""
        return cls(written=row.created_at, seq=getattr(row, "seq", 0), **entry)

    def order(self) -> tuple[date, datetime, int]:
        return (self.on, self.written or _EPOCH, self.seq)
