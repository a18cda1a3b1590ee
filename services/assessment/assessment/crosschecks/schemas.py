"""Cross-check API models: a finding with both figures and the section it tests."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from assessment.rows import from_row
from taxcore.money import SignedMoney

if TYPE_CHECKING:
    from assessment.crosschecks.models import CrosscheckFinding


class CrosscheckFindingOut(BaseModel):
    id: str
    tax_account: str
    period: str
    declaration_id: str = Field(description="the operator's declaration version the finding is on")
    rule: str = Field(examples=["intermediary_shortfall"])
    line: str
    message: str
    declared: SignedMoney = Field(description="what the operator declared (room-nights as a count)")
    reported: SignedMoney = Field(description="what the other source (intermediaries, registry, peers) says")
    difference: SignedMoney
    section: str
    parameters: dict[str, Any]
    recorded_at: datetime

    @classmethod
    def of(cls, f: CrosscheckFinding) -> CrosscheckFindingOut:
        return from_row(cls, f, recorded_at=f.created_at)
