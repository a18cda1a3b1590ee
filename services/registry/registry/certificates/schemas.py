"""Request and response bodies of exemption certificates."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CertificateCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str | None = Field(
        default=None,
        max_length=100,
        description="an exemption of the lodging's jurisdiction evidenced by a certificate, e.g. "
        "pr_film_production (PR §24(F)); default: its only such exemption",
    )
    certificate_number: str = Field(min_length=1, max_length=60)
    production: str = Field(min_length=1, max_length=200)
    valid_from: date
    valid_to: date

    @model_validator(mode="after")
    def _dates(self) -> CertificateCreate:
        if self.valid_to < self.valid_from:
            raise ValueError("valid_to is before valid_from")
        return self


class CertificateOut(BaseModel):
    id: str
    lodging_id: str
    kind: str
    certificate_number: str
    production: str
    valid_from: date
    valid_to: date
    created_at: datetime
