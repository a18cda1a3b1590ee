"""API models of case work (proposals, cases, abatements, the account timeline)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from taxcore.money import fmt


def _no_float(v: Any) -> Any:
    if isinstance(v, float):
        raise ValueError("send money as a string like '12.50'")
    return v


MoneyIn = Annotated[Decimal, BeforeValidator(_no_float), Field(ge=0, max_digits=18, decimal_places=2)]
MoneyOut = Annotated[Decimal, PlainSerializer(fmt, return_type=str)]


class ReviewCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str | None = Field(default=None, max_length=5000)


class ProposalOut(BaseModel):
    id: str
    tax_account: str
    period: str | None
    action: str
    subject_id: str
    amount: MoneyOut
    payload: dict[str, Any]
    proposed_by: str
    proposed_on: date
    admin_approval_required: bool
    status: Literal["pending", "approved", "rejected"]
    reviewed_by: str | None
    reviewed_on: date | None
    note: str | None


class TimelineEntry(BaseModel):
    on: date
    kind: str = Field(description="what happened, e.g. case.filed, proposal.made, adjustment.abate")
    subject_id: str
    period: str | None
    by: str | None
    amount: MoneyOut | None
    section: str | None
    summary: str


class Timeline(BaseModel):
    tax_account: str
    entries: list[TimelineEntry]
