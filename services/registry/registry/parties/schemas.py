from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class PartyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    email: str | None = Field(default=None, max_length=200, pattern=r"^[^@\s]+@[^@\s]+$")
    tax_id: str | None = Field(default=None, max_length=50)


class FacilitatorCreate(PartyCreate):
    operator_id: str | None = Field(
        default=None, max_length=100, description="set when the intermediary is also a registered operator"
    )


class OperatorOut(BaseModel):
    id: str
    name: str
    email: str | None
    tax_id: str | None
    created_at: datetime


class FacilitatorOut(BaseModel):
    id: str
    name: str
    email: str | None
    operator_id: str | None
    created_at: datetime
