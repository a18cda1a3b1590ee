"""Request and response bodies of the token endpoint and client management."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from servicekit.auth import Role


class TokenOut(BaseModel):
    access_token: str
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int
    role: str


class ClientCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    role: Role
    operator_id: str | None = Field(default=None, max_length=100)
    facilitator_id: str | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _binding(self) -> ClientCreate:
        if self.role == "operator" and not self.operator_id:
            raise ValueError("an operator client must be bound to operator_id")
        if self.role == "facilitator" and not self.facilitator_id:
            raise ValueError("a facilitator client must be bound to facilitator_id")
        if self.role not in ("operator",) and self.operator_id:
            raise ValueError("operator_id is only for operator clients")
        if self.role not in ("facilitator",) and self.facilitator_id:
            raise ValueError("facilitator_id is only for facilitator clients")
        return self


class ClientOut(BaseModel):
    client_id: str
    name: str
    role: str
    operator_id: str | None
    facilitator_id: str | None
    created_at: datetime
    rotated_at: datetime | None
    revoked_at: datetime | None


class ClientSecretOut(ClientOut):
    client_secret: str = Field(description="shown once; store it now")
