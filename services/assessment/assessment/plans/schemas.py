from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.money import Money, PositiveMoney


class LineIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    due_on: date
    amount: PositiveMoney


class PlanCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    as_of: date | None = Field(default=None, description="the balance date (default today)")
    periods: list[Annotated[str, Field(pattern=r"^\d{4}-(0[1-9]|1[0-2])$")]] | None = Field(
        default=None,
        min_length=1,
        max_length=600,
        description="periods planned (default every period owing on as_of)",
    )
    down_payment: LineIn | None = None
    installments: list[LineIn] = Field(min_length=1, max_length=120)
    request_id: str | None = Field(
        default=None, max_length=64, description="the taxpayer's request this grants"
    )


class InstallmentOut(BaseModel):
    number: int = Field(description="0: the down payment")
    due_on: date
    amount: Money
    paid: Money
    paid_on: date | None
    status: Literal["paid", "due", "late", "missed"]
    grace_ends_on: date


class PlanStepOut(BaseModel):
    step: str
    on: date
    by: str
    details: dict[str, Any]


class PlanOut(BaseModel):
    id: str
    tax_account: str
    jurisdiction: str
    periods: list[str]
    balance_as_of: date
    planned_amount: Money
    granted_on: date
    granted_by: str
    request_id: str | None
    grace_days: int
    section: str
    as_of: date
    status: Literal["current", "completed", "defaulted"]
    status_since: date | None
    paid: Money
    remaining: Money
    schedule: list[InstallmentOut]
    steps: list[PlanStepOut]


class PlanRequestCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    installments: int = Field(ge=1, le=120)
    explanation: str = Field(min_length=1, max_length=10_000)


class DeclineCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reasons: str = Field(min_length=1, max_length=10_000)


class DeclinedOut(BaseModel):
    on: date
    by: str
    reasons: str


class PlanRequestOut(BaseModel):
    id: str
    tax_account: str
    installments: int
    explanation: str
    requested_on: date
    requested_by: str
    status: Literal["pending", "granted", "declined"]
    plan_id: str | None
    declined: DeclinedOut | None
