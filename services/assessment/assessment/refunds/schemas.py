from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from assessment.casework.schemas import WorkStepOut
from assessment.rows import from_row
from taxcore.money import Money

if TYPE_CHECKING:
    from assessment.casework.models import Proposal, RefundStep
    from assessment.models import Refund


class RefundDecisionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcome: Literal["approve", "deny"]
    reasons: str = Field(min_length=1, max_length=10_000)


class RefundPaymentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Literal["ach", "check", "wire"]
    reference: str = Field(min_length=1, max_length=200, description="the bank's or cheque's reference")
    paid_on: date | None = None


class Disbursement(BaseModel):
    method: str
    reference: str
    paid_on: date


class RefundStepOut(WorkStepOut):
    pass


class RefundStatusOut(BaseModel):
    refund_id: str
    tax_account: str
    amount: Money
    requested_on: date
    requested_by: str
    status: Literal["requested", "under_review", "approved", "denied", "paid"]
    pending_proposal_id: str | None
    pending_action: Literal["refund.approve", "refund.pay"] | None
    steps: list[RefundStepOut]
    disbursement: Disbursement | None

    @classmethod
    def of(cls, refund: Refund, steps: list[RefundStep], pending: Proposal | None) -> RefundStatusOut:
        """The refund where its steps (in write order) leave it; only a paid one has a disbursement."""
        paid = next((s for s in steps if s.step == "paid"), None)
        return from_row(
            cls,
            refund,
            refund_id=refund.id,
            status=steps[-1].step if steps else "requested",
            pending_proposal_id=pending.id if pending else None,
            pending_action=pending.action if pending else None,
            steps=[RefundStepOut.model_validate(s) for s in steps],
            disbursement=(
                Disbursement(
                    method=paid.details["method"], reference=paid.details["reference"], paid_on=paid.on
                )
                if paid
                else None
            ),
        )
