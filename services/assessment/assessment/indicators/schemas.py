"""API models of the TADAT indicators."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

Unit = Literal["percent", "count", "days", "amount"]
#: what a numerator or denominator counts: money (two decimals) or things (an integer)
PartUnit = Literal["amount", "count"]
#: why a figure is null: the denominator is zero; no audit closed in the window (``audit_yield``)
ReasonCode = Literal["nothing_to_measure", "no_audit_closed"]


class Window(BaseModel):
    from_: str = Field(alias="from", serialization_alias="from")
    to: str
    starts_on: date
    ends_on: date
    as_of: date


class Indicator(BaseModel):
    code: str = Field(description="TADAT performance indicator (P4-10, P5-11, ...)")
    name: str
    value: str | None = Field(description="the figure (a decimal as a string); null with a reason")
    unit: Unit
    numerator: str | None
    denominator: str | None
    numerator_unit: PartUnit | None = Field(
        default=None, description="amount: money, two decimals; count: an integer (null with no numerator)"
    )
    denominator_unit: PartUnit | None = Field(default=None, description="as numerator_unit")
    definition: str = Field(description="what the figure counts, in English, with the values of ``terms``")
    terms: dict[str, str] = Field(
        description="the values the definition names (ISO dates, sections, the jurisdiction), by a "
        "name fixed for each indicator ``name``: a client words the definition in its reader's "
        "language from ``name`` and these"
    )
    reason: str | None
    reason_code: ReasonCode | None = Field(description="why the value is null, as a code (with ``reason``)")


class IndicatorsOut(BaseModel):
    jurisdiction: str
    window: Window
    indicators: list[Indicator]
