from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from taxcore.jurisdictions import JurisdictionCode
from taxcore.money import Money

FundCode = Annotated[str, StringConstraints(min_length=1, max_length=80, pattern=r"^[a-z][a-z0-9_]*$")]


class OpeningStateCreate(BaseModel):
    """What each fund already received this fiscal year, through ``through_month``, before the
    platform's first run of the jurisdiction (go-live in the middle of a fiscal year)."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: JurisdictionCode
    through_month: str = Field(
        pattern=r"^\d{4}-(0[1-9]|1[0-2])$",
        examples=["2026-08"],
        description="the last month distributed outside the platform; the first run is the next one",
    )
    transferred: dict[FundCode, Money] = Field(
        max_length=50,
        description="fund code -> amount it received this fiscal year through that month "
        "(a fund left out received nothing)",
        examples=[{"pr_bank_special_account": "240000.00", "pr_convention_bureau": "750000.00"}],
    )
    document_reference: str = Field(
        min_length=1, max_length=200, description="the agency's record of those transfers"
    )
    supersedes: str | None = Field(
        default=None, max_length=64, description="id of the current opening state this one corrects"
    )
    reason: str | None = Field(default=None, max_length=500)


class OpeningStateOut(BaseModel):
    id: str
    jurisdiction: str
    version: int
    fiscal_year: int
    through_month: str
    first_run_month: str
    transferred: dict[str, Money]
    document_reference: str
    supersedes: str | None
    reason: str | None
    current: bool
    entered_by: str
    entered_at: datetime
