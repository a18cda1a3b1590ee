from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from assessment.rows import from_row
from taxcore.money import Money, PositiveMoney

if TYPE_CHECKING:
    from assessment.casework.models import AbatementDecision, AbatementRequest, Proposal


class AbatementCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    period: str = Field(pattern=r"^\d{4}-\d{2}$")
    component: Literal["penalty", "interest", "fine"]
    amount: PositiveMoney
    ground: Literal["reasonable_cause", "agency_error"]
    explanation: str = Field(min_length=1, max_length=10_000)


class AbatementDecisionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcome: Literal["full", "partial", "deny"]
    amount: Money | None = Field(default=None, description="partial: the amount abated")
    reasons: str = Field(min_length=1, max_length=10_000)


class AbatementDecisionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    outcome: Literal["full", "partial", "deny"]
    amount: Money
    reasons: str
    decided_on: date
    decided_by: str
    proposed_by: str | None


class AbatementOut(BaseModel):
    id: str
    tax_account: str
    period: str
    component: str
    amount: Money
    ground: str
    explanation: str
    requested_on: date
    requested_by: str
    status: Literal["requested", "decision_proposed", "full", "partial", "denied"]
    pending_proposal_id: str | None
    decision: AbatementDecisionOut | None

    @classmethod
    def of(
        cls, abatement: AbatementRequest, decision: AbatementDecision | None, pending: Proposal | None
    ) -> AbatementOut:
        """The request, its decision once made, and the proposal awaiting approval if any."""
        status = decision.outcome if decision else ("decision_proposed" if pending else "requested")
        return from_row(
            cls,
            abatement,
            status={"deny": "denied"}.get(status, status),
            pending_proposal_id=pending.id if pending else None,
            decision=AbatementDecisionOut.model_validate(decision) if decision else None,
        )
