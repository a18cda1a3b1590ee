"""API models of write-offs."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from assessment.rows import from_row

if TYPE_CHECKING:
    from assessment.casework.models import AdjustmentFact, AdjustmentReversal


class WriteOffCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    period: str = Field(pattern=r"^\d{4}-\d{2}$")
    reason: Literal["business_closed", "bankrupt", "uncollectible", "limitation_passed"]
    explanation: str = Field(min_length=1, max_length=10_000)


class ReversalCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=10_000)


class WriteOffOut(BaseModel):
    write_off_id: str
    tax_account: str
    period: str
    effective_on: date
    reason: str
    section: str
    proposed_by: str | None
    approved_by: str
    reversed_on: date | None
    reversal_reason: str | None

    @classmethod
    def of(cls, fact: AdjustmentFact, reversal: AdjustmentReversal | None) -> WriteOffOut:
        """The write-off fact, and its reversal once money appeared."""
        return from_row(
            cls,
            fact,
            write_off_id=fact.id,
            reversed_on=reversal.reversed_on if reversal else None,
            reversal_reason=reversal.reason if reversal else None,
        )
