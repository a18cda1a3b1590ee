from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator


class AuthorizationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    facilitator_id: str = Field(min_length=1, max_length=100)
    starts_on: date
    ends_on: date | None = None

    @model_validator(mode="after")
    def _dates(self) -> AuthorizationCreate:
        if self.ends_on is not None and self.ends_on < self.starts_on:
            raise ValueError("ends_on is before starts_on")
        return self


class AuthorizationEnd(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ends_on: date


class AuthorizationOut(BaseModel):
    id: str
    lodging_id: str
    tax_account: str
    facilitator_id: str
    starts_on: date
    ends_on: date | None
    created_at: datetime
