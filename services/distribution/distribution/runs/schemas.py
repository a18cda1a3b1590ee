from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.jurisdictions import JurisdictionCode
from taxcore.money import SignedMoney


class RunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    jurisdiction: JurisdictionCode
    month: str = Field(pattern=r"^\d{4}-(0[1-9]|1[0-2])$", examples=["2026-07"])
    preview: bool = Field(default=False, description="compute the run without posting anything")


class Allocation(BaseModel):
    account: str
    fund: str
    name: str
    amount: SignedMoney
    rule: str
    section: str


class RunOut(BaseModel):
    """A monthly run and its report: ``sum(allocations) + pending == collected``."""

    id: str | None = Field(description="null for a preview")
    status: Literal["posted", "preview"]
    jurisdiction: str
    month: str
    fiscal_year: int
    closed_through: date
    collected: SignedMoney
    collected_in_month: SignedMoney
    released: SignedMoney
    pending: SignedMoney
    allocations: list[Allocation]
    inputs: dict[str, Any]
    journal_entry_id: int | None
    posted_at: datetime | None
    state: dict[str, Any]
    trace: list[dict[str, Any]]
