from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from taxcore.money import Money, PositiveMoney


class BondCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["cash_deposit", "letter_of_credit", "surety"] = Field(description="PR §27(C)")
    amount: PositiveMoney
    issuer: str = Field(min_length=1, max_length=200)
    reference: str | None = Field(default=None, max_length=100)
    effective_on: date
    expires_on: date

    @model_validator(mode="after")
    def _dates(self) -> BondCreate:
        if self.expires_on < self.effective_on:
            raise ValueError("expires_on is before effective_on")
        return self


class BondStatusChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Literal["released", "cancelled"]


class DrawCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount: PositiveMoney
    drawn_on: date
    reason: str = Field(min_length=1, max_length=500)


class DrawOut(BaseModel):
    id: str
    bond_id: str
    amount: Money
    drawn_on: date
    reason: str
    request_event_id: str | None
    created_at: datetime


class BondOut(BaseModel):
    id: str
    lodging_id: str
    kind: str
    amount: Money
    issuer: str
    reference: str | None
    effective_on: date
    expires_on: date
    status: str
    drawn: Money
    remaining: Money
    draws: list[DrawOut]
    created_at: datetime
