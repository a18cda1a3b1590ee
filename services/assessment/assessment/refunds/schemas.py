from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.money import Money


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


class RefundStepOut(BaseModel):
    step: str
    on: date
    by: str
    details: dict[str, Any]


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
