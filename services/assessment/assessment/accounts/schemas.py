from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.money import PositiveMoney, SignedMoney

Amount = SignedMoney  # "1234.50"; a balance or an adjustment may be negative


class ComponentOut(BaseModel):
    assessed: Amount
    paid: Amount
    outstanding: Amount = Field(description="assessed - paid - what case work abated or wrote off")


class AdjustmentOut(BaseModel):
    """An adjustment fact (case work) and what it did to the period as of the statement date."""

    fact_id: str
    kind: Literal["reduce", "cancel", "abate", "write_off", "returned_payment_fee"]
    component: str | None
    effective_on: date
    amount: Amount = Field(description="the change in what is owed (negative lowers it)")
    section: str
    reason: str
    proposed_by: str | None
    approved_by: str
    reversed_on: date | None


class FilingOut(BaseModel):
    declaration_id: str
    filing_id: str
    version: int
    filer_kind: str
    filer_id: str
    filed_on: date
    tax: Amount
    impact_fee: Amount
    declared_total: Amount | None
    deficiency: Amount
    deficiency_reason: str | None


class EstimateOut(BaseModel):
    estimate_id: str
    raised_on: date
    taxable_base: Amount
    tax: Amount
    impact_fee: Amount
    method: str
    status: Literal["in_force", "superseded"]


class PenaltyOut(BaseModel):
    kind: str
    amount: Amount
    paid: Amount


class AppliedOut(BaseModel):
    payment_id: str
    component: str
    amount: Amount


class PeriodOut(BaseModel):
    period: str
    due_date: date
    basis: Literal["declaration", "estimate"]
    declaration_filed_on: date | None
    filings: list[FilingOut]
    estimate: EstimateOut | None
    principal: dict[str, Amount]
    deficiency: Amount
    deficiency_reasons: list[str]
    penalties: list[PenaltyOut]
    interest: Amount
    fines: Amount
    components: dict[str, ComponentOut]
    payments: list[AppliedOut]
    total_assessed: Amount
    total_paid: Amount
    balance: Amount
    days_late: int
    notice_issued_on: date | None
    total_adjusted: Amount = Decimal("0.00")
    written_off: Amount = Decimal("0.00")
    adjustments: list[AdjustmentOut] = Field(default_factory=list)
    explain: dict[str, Any] | None = Field(
        default=None, description="taxcore traces with the citation of every step (explain=true)"
    )


class ReversalOut(BaseModel):
    reversal_id: str
    amount: Amount
    reversed_on: date


class PaymentOut(BaseModel):
    payment_id: str
    received_on: date
    amount: Amount
    designations: list[dict[str, str]]
    reversed: list[ReversalOut]


class CreditItem(BaseModel):
    payment_id: str
    received_on: date
    amount: Amount
    refundable_until: date
    section: str


class CreditsOut(BaseModel):
    total: Amount
    refunded: Amount
    items: list[CreditItem]


class Statement(BaseModel):
    tax_account: str
    jurisdiction: str
    lodging_class: str
    as_of: date
    currency: str
    periods: list[PeriodOut]
    totals: dict[str, Amount]
    outstanding_by_component: dict[str, Amount]
    payments: list[PaymentOut]
    credit: CreditsOut


class RefundCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount: PositiveMoney
    requested_on: date | None = None


class RefundOut(BaseModel):
    refund_id: str
    tax_account: str
    amount: Amount
    requested_on: date
    status: Literal["requested"]
    credit: CreditsOut
