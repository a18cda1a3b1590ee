"""API models of the people domain."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from servicekit.auth import Role

Locale = Literal["en", "es"]
EMAIL = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


def bound_party(role: str, operator_id: str | None, facilitator_id: str | None) -> None:
    """An operator user names its operator, a facilitator user its facilitator, staff neither."""
    if role == "operator" and not operator_id:
        raise ValueError("an operator user must be bound to operator_id")
    if role == "facilitator" and not facilitator_id:
        raise ValueError("a facilitator user must be bound to facilitator_id")
    if role != "operator" and operator_id:
        raise ValueError("operator_id is only for operator users")
    if role != "facilitator" and facilitator_id:
        raise ValueError("facilitator_id is only for facilitator users")


class NewPassword(BaseModel):
    """At least 12 characters (NIST SP 800-63B §5.1.1.2 asks 8; we ask more), at most 256."""

    model_config = ConfigDict(extra="forbid")
    password: str = Field(min_length=12, max_length=256)


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: str = Field(max_length=254, pattern=EMAIL)
    name: str = Field(min_length=1, max_length=200)
    role: Role
    operator_id: str | None = Field(default=None, max_length=100)
    facilitator_id: str | None = Field(default=None, max_length=100)
    locale: Locale = "en"
    password: str = Field(
        min_length=12, max_length=256, description="the first password; tell it to the person"
    )

    @field_validator("email")
    @classmethod
    def _lower(cls, v: str) -> str:
        return v.strip().lower()

    @model_validator(mode="after")
    def _binding(self) -> UserCreate:
        bound_party(self.role, self.operator_id, self.facilitator_id)
        return self


class PersonName(BaseModel):
    id: str
    name: str


class UserOut(BaseModel):
    id: str
    email: str
    name: str
    role: str
    operator_id: str | None
    facilitator_id: str | None
    locale: str
    created_at: datetime
    created_by: str
    password_changed_at: datetime | None
    disabled_at: datetime | None
    disabled_by: str | None


class SignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: str = Field(min_length=1, max_length=254)
    password: str = Field(min_length=1, max_length=256)


class ExternalSignIn(BaseModel):
    """An ID token from the agency's OpenID Connect provider and the nonce the web app sent."""

    model_config = ConfigDict(extra="forbid")
    id_token: str = Field(min_length=1, max_length=16384)
    nonce: str = Field(min_length=16, max_length=200)


class AccessOut(BaseModel):
    access_token: str
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int


class SessionOut(AccessOut):
    """A new sign-in session. ``refresh_token`` renews the access token; keep it server-side."""

    refresh_token: str = Field(description="shown once: renews access tokens until sign-out")
    session_id: str
    session_expires_at: datetime
    user: UserOut


class RefreshIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    refresh_token: str = Field(min_length=1, max_length=200)


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    current_password: str = Field(min_length=1, max_length=256)
    new_password: str = Field(min_length=12, max_length=256)
