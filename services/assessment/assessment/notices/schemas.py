from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


def _no_float(v: Any) -> Any:
    if isinstance(v, float):
        raise ValueError("send money as a string like '12.50'")
    return v


class NoticeCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tax_account: str = Field(min_length=1)
    period: str = Field(pattern=r"^\d{4}-\d{2}$")
    reason: str = Field(min_length=1, max_length=2000)
    issued_on: date | None = None


class ResponseCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["accept", "dispute"]
    disputed_amount: Decimal = Field(default=Decimal("0"), ge=0, max_digits=18, decimal_places=2)
    statement: str | None = Field(default=None, max_length=5000)
    responded_on: date | None = None

    _floats = field_validator("disputed_amount", mode="before")(_no_float)


class ResponseOut(BaseModel):
    id: str
    kind: str
    disputed_amount: str
    undisputed_amount: str
    statement: str | None
    responded_on: date


class BondDrawRequestOut(BaseModel):
    amount: str
    requested_on: date
    bond_id: str


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
    amounts: dict[str, str]
    status: Literal["open", "accepted", "disputed", "paid", "lapsed", "bond_draw_requested"]
    balance: str
    responses: list[ResponseOut]
    bond_draw_request: BondDrawRequestOut | None
    letter_url: str
