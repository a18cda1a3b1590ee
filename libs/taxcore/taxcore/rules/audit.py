"""The proposed assessment of an audit: the corrected return against the one filed (PR §32; VI §54(d)).

An auditor's finding for a period is a corrected set of declaration lines (the base as the
records show it). taxcore computes the corrected return exactly as any declaration
(:func:`taxcore.rules.declaration.compute_allowed`), and the proposed assessment is the
difference per component against what the filed returns came to. A negative difference (the
lodging overpaid) is reported as such; lowering what is owed goes through maker-checker.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict

from taxcore.money import ZERO, fmt
from taxcore.parameters import ParameterTree
from taxcore.rules.declaration import DeclarationInput, compute_allowed

__all__ = ["COMPONENTS", "AuditDifference", "ComponentDifference", "audit_difference"]

COMPONENTS: tuple[str, ...] = ("gross_receipts", "taxable_base", "tax", "impact_fee")


class ComponentDifference(BaseModel):
    model_config = ConfigDict(frozen=True)

    component: str
    filed: Decimal
    corrected: Decimal
    difference: Decimal


class AuditDifference(BaseModel):
    model_config = ConfigDict(frozen=True)

    period: str
    components: list[ComponentDifference]
    additional_tax: Decimal  # tax + impact fee
    trace: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "period": self.period,
            "components": [
                {
                    "component": c.component,
                    "filed": fmt(c.filed),
                    "corrected": fmt(c.corrected),
                    "difference": fmt(c.difference),
                }
                for c in self.components
            ],
            "additional_tax": fmt(self.additional_tax),
        }


def audit_difference(
    filed: DeclarationInput | None, corrected: DeclarationInput, *, parameters: ParameterTree
) -> AuditDifference:
    """The corrected period's amounts less the filed ones, per component (no return filed: zero)."""
    new = compute_allowed(corrected, parameters=parameters)
    old = compute_allowed(filed, parameters=parameters) if filed is not None else None
    components = []
    for name in COMPONENTS:
        before: Decimal = getattr(old, name) if old is not None else ZERO
        after: Decimal = getattr(new, name)
        components.append(
            ComponentDifference(component=name, filed=before, corrected=after, difference=after - before)
        )
    extra = sum((c.difference for c in components if c.component in ("tax", "impact_fee")), ZERO)
    return AuditDifference(
        period=corrected.period, components=components, additional_tax=extra, trace=new.explain()
    )
