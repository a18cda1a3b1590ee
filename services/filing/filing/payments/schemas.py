"""Payment API models (PR §28-29; VI §54(f)). Money as strings."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from filing.declarations.schemas import Filer, Money, PeriodStr, SignedMoney

#: PR §29(A): postal or bank money order, check, cashier's check, cash, electronic transfer,
#: "or any other form of payment that the Company authorizes" (card).
Method = Literal[
    "postal_money_order",
    "bank_money_order",
    "check",
    "cashiers_check",
    "cash",
    "electronic_transfer",
    "card",
]
METHOD_LABELS: dict[str, str] = {
    "postal_money_order": "Postal money order",
    "bank_money_order": "Bank money order",
    "check": "Check",
    "cashiers_check": "Cashier's check",
    "cash": "Cash",
    "electronic_transfer": "Electronic transfer",
    "card": "Card",
}


class PeriodAmountIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    period: PeriodStr
    amount: Money


class PaymentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tax_account: str = Field(min_length=1, max_length=100, description="tax account number or lodging id")
    amount: Money
    method: Method
    received_on: date | None = Field(
        default=None,
        description="the day the agency received the payment (default today; earlier: agency-admin)",
    )
    reference: str | None = Field(default=None, max_length=100, description="check or transfer number")
    periods: list[PeriodAmountIn] = Field(
        default_factory=list,
        max_length=120,
        description="periods the payer designates it for; the rest is left to assessment's application order",
    )
    payer: Filer | None = Field(default=None, description="agency-admin only: who paid")


class PeriodAmountOut(BaseModel):
    period: str
    amount: Money


class ReversalCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=500, examples=["check returned unpaid (insufficient funds)"])
    reversed_on: date | None = Field(default=None, description="default today")


class ReversalOut(BaseModel):
    id: str
    payment_id: str
    tax_account: str
    amount: Money
    reversed_on: date
    reason: str
    submitted_by: str
    created_at: datetime


class PaymentOut(BaseModel):
    id: str
    tax_account: str
    lodging_id: str
    jurisdiction: str
    amount: Money
    currency: str = "USD"
    method: Method
    reference: str | None
    received_on: date
    payer: Filer
    periods: list[PeriodAmountOut]
    unallocated: SignedMoney
    status: Literal["received", "reversed"]
    reversal: ReversalOut | None
    submitted_by: str
    created_at: datetime


class ReceiptOut(BaseModel):
    """A receipt for a payment (PR §28(C)), also printable (``?format=pdf``)."""

    receipt_number: str
    agency: str
    jurisdiction: str
    legal_basis: str
    tax_account: str
    lodging_name: str
    payer: Filer
    payer_name: str | None = Field(
        description="the payer's registered name (registry projection); null until the registry's "
        "event has arrived"
    )
    amount: Money
    currency: str = "USD"
    method: Method
    method_label: str
    reference: str | None
    received_on: date
    periods: list[PeriodAmountOut]
    unallocated: SignedMoney
    status: Literal["received", "reversed"]
    reversal: ReversalOut | None
    verification_code: str
    verify_url: str
    issued_at: datetime


class VerificationOut(BaseModel):
    valid: bool
    receipt_number: str
    agency: str
    jurisdiction: str
    tax_account: str
    amount: Money
    currency: str = "USD"
    method: Method
    received_on: date
    status: Literal["received", "reversed"]
