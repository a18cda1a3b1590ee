from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assessment.casework.schemas import WorkStepOut
from assessment.rows import from_row
from taxcore.money import Money

if TYPE_CHECKING:
    from assessment.cases.service import CaseView
    from assessment.casework.models import CaseStep

Status = Literal[
    "filed", "under_review", "hearing_scheduled", "decision_proposed", "decided", "under_appeal", "closed"
]


class HearingCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hearing_on: date
    place: str | None = Field(default=None, max_length=500)
    video_link: str | None = Field(default=None, max_length=2000, pattern=r"^https://")


class DecisionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcome: Literal["sustain", "reduce", "cancel"]
    amounts: dict[str, Money] = Field(
        default_factory=dict,
        description="reduce: the amount each component (tax, impact_fee, fine) is reduced to",
    )
    reasons: str = Field(min_length=1, max_length=10_000, description="the written reasons of the decision")


class AppealCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filed_on: date | None = None
    grounds: str = Field(min_length=1, max_length=10_000)


class AppealDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcome: Literal["reduce", "cancel"]
    amounts: dict[str, Money] = Field(
        default_factory=dict,
        description="reduce: the amount each component (tax, impact_fee, fine) is reduced to",
    )


class AppealResolution(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcome: Literal["upheld", "withdrawn", "replaced"] = Field(
        description="upheld or withdrawn: the decision stands; replaced: ``decision`` replaces it "
        "(proposed here, approved by another agency person)"
    )
    reasons: str = Field(min_length=1, max_length=10_000)
    decision: AppealDecision | None = None


class StepOut(WorkStepOut):
    pass


class DecisionOut(BaseModel):
    outcome: Literal["sustain", "reduce", "cancel"]
    amounts: dict[str, str]
    reasons: str
    decided_on: date
    decided_by: str | None
    proposed_by: str | None
    appeal_deadline: date

    @classmethod
    def of(cls, step: CaseStep) -> DecisionOut:
        """The decision step (``decided``) as its details recorded it."""
        return cls(
            outcome=step.details["outcome"],
            amounts=step.details.get("amounts", {}),
            reasons=step.details["reasons"],
            decided_on=step.on,
            decided_by=step.details.get("decided_by"),
            proposed_by=step.details.get("proposed_by"),
            appeal_deadline=step.details["appeal_deadline"],
        )


class AppealOutcomeOut(BaseModel):
    outcome: Literal["upheld", "withdrawn", "replaced"]
    reasons: str
    resolved_on: date
    #: replaced: the new decision (its facts count from ``resolved_on``)
    decision: dict[str, Any] | None = None
    decided_by: str | None = None
    proposed_by: str | None = None

    @classmethod
    def of(cls, step: CaseStep) -> AppealOutcomeOut:
        """The ``appeal_resolved`` step as its details recorded it."""
        return cls(
            outcome=step.details["outcome"],
            reasons=step.details["reasons"],
            resolved_on=step.on,
            decision=step.details.get("decision"),
            decided_by=step.details.get("decided_by"),
            proposed_by=step.details.get("proposed_by"),
        )


class HoldReason(BaseModel):
    code: Literal["under_appeal", "not_decided", "appeal_term", "written_off"]
    case_id: str | None = Field(description="the case that holds collection (not for a write-off)")
    on: date | None = Field(description="appeal_term: the last day to appeal; written_off: since when")


class CaseOut(BaseModel):
    id: str
    tax_account: str
    jurisdiction: str
    period: str
    notice_id: str
    disputed_amount: Money
    opened_on: date
    status: Status
    pending_proposal_id: str | None
    steps: list[StepOut]
    decision: DecisionOut | None
    appeal: AppealOutcomeOut | None = Field(default=None, description="how the appeal was resolved")
    collection_hold: str | None = Field(description="why collection actions on the period wait, if they do")
    collection_hold_reason: HoldReason | None = Field(
        default=None, description="the same reason as a code with its values, for clients to translate by"
    )

    @classmethod
    def of(
        cls, current: CaseView, *, collection_hold: str | None, collection_hold_reason: HoldReason | None
    ) -> CaseOut:
        """The case as its steps leave it, its decision and how an appeal was resolved."""
        case = current.case
        resolved = next((s for s in reversed(current.steps) if s.step == "appeal_resolved"), None)
        return from_row(
            cls,
            case,
            status=current.status,
            pending_proposal_id=current.pending.id if current.pending else None,
            steps=[StepOut.model_validate(s) for s in current.steps],
            decision=DecisionOut.of(current.decision) if current.decision is not None else None,
            appeal=AppealOutcomeOut.of(resolved) if resolved is not None else None,
            collection_hold=collection_hold,
            collection_hold_reason=collection_hold_reason,
        )
