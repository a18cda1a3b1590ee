"""API models of the jobs run by hand (the daily worker runs the same use-cases)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from taxcore.money import fmt

if TYPE_CHECKING:
    from assessment.models import BondDrawRequest
    from assessment.plans.models import PlanStep


class NonFilersOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    as_of: date
    raised: list[dict[str, str]]
    skipped: list[dict[str, str]]


class LapsedOut(BaseModel):
    as_of: date
    requested: list[dict[str, Any]]

    @classmethod
    def of(cls, as_of: date, made: Sequence[BondDrawRequest]) -> LapsedOut:
        return cls(
            as_of=as_of,
            requested=[
                {
                    "notice_id": r.notice_id,
                    "tax_account": r.tax_account,
                    "period": r.period,
                    "bond_id": r.bond_id,
                    "amount": fmt(r.amount),
                    "event_id": r.event_id,
                }
                for r in made
            ],
        )


class PlanStepsOut(BaseModel):
    as_of: date
    steps: list[dict[str, Any]]

    @classmethod
    def of(cls, as_of: date, made: Sequence[PlanStep]) -> PlanStepsOut:
        steps = [
            {"plan_id": s.subject_id, "tax_account": s.tax_account, "step": s.step, "on": s.on} for s in made
        ]
        return cls(as_of=as_of, steps=steps)
