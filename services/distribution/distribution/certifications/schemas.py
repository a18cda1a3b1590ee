from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field

from taxcore.jurisdictions import JurisdictionCode
from taxcore.money import Money


class CertificationCreate(BaseModel):
    """The Bank's certification of a fiscal year's debt-service amount (PR §31(A)), for a
    jurisdiction whose distribution takes one (taxcore ``distribution.certification_required``)."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: JurisdictionCode | None = Field(
        default=None,
        description="default: the one jurisdiction whose distribution takes a certification (PR)",
    )
    fiscal_year: int = Field(
        ge=2004, le=9999, description="the jurisdiction's fiscal year, labelled by the year it ends"
    )
    amount: Money
    certified_on: date
    document_reference: str = Field(min_length=1, max_length=200)
    first_year_months_remaining: int | None = Field(
        default=None,
        ge=1,
        le=12,
        description="only for the fiscal year the transfers start: 1/(months remaining) a month",
    )
    supersedes: str | None = Field(
        default=None,
        max_length=100,
        description="id of the current certification of the fiscal year this one corrects",
    )
    reason: str | None = Field(default=None, max_length=500)


class CertificationOut(BaseModel):
    id: str
    jurisdiction: str
    fiscal_year: int
    version: int
    amount: Money
    certified_on: date
    document_reference: str
    first_year_months_remaining: int | None
    supersedes: str | None
    reason: str | None
    current: bool
    created_at: datetime
