from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.jurisdictions import JurisdictionCode

#: a code with taxcore parameters (``taxcore.jurisdictions.known_jurisdictions()``); 422 otherwise
Jurisdiction = JurisdictionCode
Status = Literal["active", "suspended", "closed"]


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid")
    line1: str = Field(min_length=1, max_length=200)
    line2: str | None = Field(default=None, max_length=200)
    municipality: str = Field(min_length=1, max_length=100, description="PR municipality or VI island")
    postal_code: str | None = Field(default=None, max_length=20)


class LodgingCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    jurisdiction: Jurisdiction
    lodging_class: str = Field(
        min_length=1,
        max_length=100,
        description="one of the jurisdiction's lodging classes (taxcore parameter lodging.classes), e.g. "
        "PR: hotel, condohotel, apartment_hotel, all_inclusive_hotel, hostelry, guesthouse, "
        "inn, motel, short_term_rental, government_recreational_facility; "
        "VI: hotel, apartment_condominium_residence, timeshare",
    )
    casino: bool = False
    name: str = Field(min_length=1, max_length=200)
    address: Address
    room_count: int = Field(ge=1, le=100_000)
    operator_id: str = Field(min_length=1, max_length=100)
    registered_on: date
    preferred_language: Literal["en", "es"] | None = Field(
        default=None,
        description="language of the lodging's official documents; default: the jurisdiction's "
        "(taxcore agency.default_language: PR Spanish, VI English)",
    )


class LodgingUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, max_length=200)
    address: Address | None = None
    room_count: int | None = Field(default=None, ge=1, le=100_000)
    preferred_language: Literal["en", "es"] | None = None


class AttributeChange(BaseModel):
    """A class or casino change, in force from ``effective_from`` (a period's first day)."""

    model_config = ConfigDict(extra="forbid")
    effective_from: date = Field(description="the first day of a month, on or after the latest change")
    lodging_class: str | None = Field(default=None, min_length=1, max_length=100)
    casino: bool | None = None
    reason: str | None = Field(default=None, max_length=500)


class AttributeOut(BaseModel):
    effective_from: date
    lodging_class: str
    casino: bool
    reason: str | None


class StatusChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Status
    effective_from: date
    reason: str | None = Field(default=None, max_length=500)


class StatusOut(BaseModel):
    status: Status
    effective_from: date
    reason: str | None


class LodgingOut(BaseModel):
    id: str
    tax_account: str
    jurisdiction: str
    lodging_class: str
    casino: bool
    name: str
    address: Address
    room_count: int
    operator_id: str
    registered_on: date
    preferred_language: Literal["en", "es"] | None = None
    status: Status
    statuses: list[StatusOut]
    attributes: list[AttributeOut] = Field(description="class and casino licence, effective-dated")
    created_at: datetime


class Compliance(BaseModel):
    lodging_id: str
    tax_account: str
    as_of: date
    compliant: bool
    bond_required: bool
    valid_bond_id: str | None
    reasons: list[str]
