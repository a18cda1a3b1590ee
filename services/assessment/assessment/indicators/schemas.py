"""API models of the TADAT indicators."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

Unit = Literal["percent", "count", "days", "amount"]


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
    definition: str
    reason: str | None


class IndicatorsOut(BaseModel):
    jurisdiction: str
    window: Window
    indicators: list[Indicator]
