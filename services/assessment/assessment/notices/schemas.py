from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.money import Money, SignedMoney


class NoticeCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tax_account: str = Field(min_length=1, max_length=100)
    period: str = Field(pattern=r"^\d{4}-\d{2}$")
    reason: str = Field(min_length=1, max_length=2000)
    issued_on: date | None = None


class ResponseCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["accept", "dispute"]
    disputed_amount: Money = Decimal("0.00")
    statement: str | None = Field(default=None, max_length=5000)
    responded_on: date | None = None


class ResponseOut(BaseModel):
    id: str
    kind: str
    disputed_amount: Money
    undisputed_amount: Money
    statement: str | None
    responded_on: date


class BondDrawRequestOut(BaseModel):
    amount: Money
    requested_on: date
    bond_id: str


class NoticeCaseOut(BaseModel):
    case_id: str
    status: str
    outcome: Literal["sustain", "reduce", "cancel"]
    decided_on: date
    appeal_deadline: date
    decision_url: str


class NoticeOut(BaseModel):
    id: str
    tax_account: str
    jurisdiction: str
    period: str
    kind: Literal["deficiency", "clerical_error"]
    reason: str
    section: str
    issued_on: date
    response_deadline: date
    response_term: dict[str, Any]
    amounts: dict[str, SignedMoney]
    status: Literal[
        "open",
        "accepted",
        "disputed",
        "sustained",
        "reduced",
        "cancelled",
        "paid",
        "lapsed",
        "bond_draw_requested",
    ] = Field(
        description="disputed until its case is decided; then the decision (sustained, reduced, cancelled)"
    )
    case: NoticeCaseOut | None = Field(default=None, description="the case its dispute opened, once decided")
    balance: SignedMoney
    responses: list[ResponseOut]
    bond_draw_request: BondDrawRequestOut | None
    letter_url: str
