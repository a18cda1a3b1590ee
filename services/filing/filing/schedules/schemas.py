"""Remittance schedule models: one facilitator, one period, one row per lodging.

JSON and CSV carry the same row shape (the CSV header names the columns; empty
cells take the defaults). One exemption per row at most.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from filing.declarations.schemas import DeclaredFigures, DeclaredLines, ExemptIn, Money, PeriodStr, built
from taxcore.lines import ReturnLines
from taxcore.rules.declaration import LINES

#: The return fields a schedule row carries: taxcore's money lines and the counts.
_COUNT_FIELDS: tuple[str, ...] = ("room_nights", "timeshare_owner_unit_days", "tax_itemized")
_LINE_FIELDS: tuple[str, ...] = (*LINES, *_COUNT_FIELDS)

ROW_COLUMNS: tuple[str, ...] = (
    "tax_account",
    *_LINE_FIELDS,
    "exemption",
    "exempt_amount",
    "exemption_evidence",
    "declared_taxable_base",
    "declared_tax",
    "declared_impact_fee",
    "declared_total",
)


#: Hard ceiling on a JSON schedule's rows (the upload body is capped at 32 MiB anyway).
ROWS_MAX = 100_000


class _RowAccount(BaseModel):
    tax_account: str = Field(min_length=1, max_length=100)


class ScheduleRow(ReturnLines, _RowAccount):  # bases in this order: tax_account stays the first field
    """One lodging's bookings through the facilitator for the period."""

    exemption: str | None = Field(default=None, max_length=100)
    exempt_amount: Money | None = None
    exemption_evidence: str | None = Field(default=None, max_length=100)
    declared_taxable_base: Money | None = None
    declared_tax: Money | None = None
    declared_impact_fee: Money | None = None
    declared_total: Money | None = None

    def lines(self) -> DeclaredLines:
        """The row's lines (already validated: built without validating them again)."""
        exempt: list[ExemptIn] = []
        if self.exemption or self.exempt_amount is not None:
            exempt.append(
                ExemptIn.model_validate(
                    {
                        "exemption": self.exemption,
                        "amount": self.exempt_amount or Decimal(0),
                        "evidence": self.exemption_evidence,
                    }
                )
            )
        values: dict[str, Any] = {f: getattr(self, f) for f in LINES}
        values["comp_rooms"] = []
        values["exempt"] = exempt
        for f in _COUNT_FIELDS:
            values[f] = getattr(self, f)
        values["books_kept"] = True
        return built(DeclaredLines, values)

    def declared(self) -> DeclaredFigures:
        """The row's own figures (validated as ``Money``: built without validating them again;
        a row has no line total, left unset as ``DeclaredFigures(...)`` of the four leaves it)."""
        return built(
            DeclaredFigures,
            {
                "taxable_base": self.declared_taxable_base,
                "tax": self.declared_tax,
                "impact_fee": self.declared_impact_fee,
                "total": self.declared_total,
                "line_total": None,
            },
            {"taxable_base", "tax", "impact_fee", "total"},
        )


assert (*LINES, "comp_rooms", "exempt", *_COUNT_FIELDS, "books_kept") == tuple(DeclaredLines.model_fields), (
    "ScheduleRow.lines builds DeclaredLines in its fields' order"
)


class ScheduleCreate(BaseModel):
    """The JSON form. The CSV form sends the rows as ``text/csv`` (or a multipart ``file``)
    with ``period`` (and, for the agency, ``facilitator_id``) as query or form fields."""

    model_config = ConfigDict(extra="forbid")
    period: PeriodStr
    facilitator_id: str | None = Field(
        default=None, max_length=100, description="agency-admin only: the facilitator"
    )
    received_on: date | None = Field(default=None, description="agency-admin only (default today)")
    rows: list[dict[str, Any]] = Field(
        max_length=ROWS_MAX,
        description="ScheduleRow objects; each is validated on its own (the service's "
        "schedule_max_rows, 50,000 by default, is the working limit)",
    )


class RowError(BaseModel):
    field: str | None
    reason: str
    code: str | None = Field(
        default=None,
        description="a stable code for the reason (pydantic's error type, or duplicate_lodging, "
        "not_authorized, not_authorized_for_period, period_not_fileable, not_computable, "
        "not_an_object): clients translate by it; older schedules have none",
    )


class RowResult(BaseModel):
    row: int = Field(description="1-based position of the row in the document (CSV: after the header)")
    tax_account: str | None
    status: Literal["accepted", "rejected"]
    declaration_id: str | None = None
    version: int | None = None
    tax: Money | None = None
    total_due: Money | None = None
    flagged: bool | None = None
    errors: list[RowError] = []


class ScheduleSummary(BaseModel):
    """A schedule in a list: its counts, without the per-row results."""

    id: str
    facilitator_id: str
    period: str
    received_on: date
    source_format: Literal["json", "csv"]
    status: Literal["accepted", "partially_accepted", "rejected"]
    rows: int
    accepted: int
    rejected: int
    submitted_by: str
    created_at: datetime


class ScheduleOut(ScheduleSummary):
    results: list[RowResult]
