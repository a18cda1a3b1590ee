"""API models of case work (proposals, cases, abatements, the account timeline)."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.money import Money


class ReviewCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str | None = Field(default=None, max_length=5000)


class ProposalOut(BaseModel):
    id: str
    tax_account: str
    period: str | None
    action: str
    subject_id: str
    amount: Money
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
    amount: Money | None
    section: str | None
    summary: str
    note: str | None = Field(
        default=None, description="what a person wrote (a reason, a note), apart from the summary's words"
    )


class Timeline(BaseModel):
    tax_account: str
    entries: list[TimelineEntry]
