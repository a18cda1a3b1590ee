"""Cross-check API models: a finding with both figures and the section it tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from taxcore.money import SignedMoney


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
    def of(cls, f: Any) -> CrosscheckFindingOut:
        return cls(
            id=f.id,
            tax_account=f.tax_account,
            period=f.period,
            declaration_id=f.declaration_id,
            rule=f.rule,
            line=f.line,
            message=f.message,
            declared=f.declared,
            reported=f.reported,
            difference=f.difference,
            section=f.section,
            parameters=f.parameters,
            recorded_at=f.created_at,
        )
