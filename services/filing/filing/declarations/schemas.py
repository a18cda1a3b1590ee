"""Declaration API models. Money is sent and returned as strings ("1234.50")."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from taxcore.rules.declaration import CompValuation, ExemptAmount


def _no_float(value: Any) -> Any:
    if isinstance(value, float):
        raise ValueError("send amounts as strings like '12.50', not JSON numbers with decimals")
    return value


def _cents(value: Decimal) -> Decimal:
    """Dollars and cents: at most two decimals (trailing zeros aside) and 16 digits."""
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or value.adjusted() >= 16:
        raise ValueError("an amount in dollars and cents of at most 16 digits")
    if exponent < -2:
        rounded = value.quantize(Decimal("0.01"))
        if rounded != value:
            raise ValueError("an amount in dollars and cents: at most 2 decimals")
        return rounded
    return value


Money = Annotated[Decimal, BeforeValidator(_no_float), AfterValidator(_cents)]
PeriodStr = Annotated[str, Field(pattern=r"^\d{4}-\d{2}$", examples=["2026-10"])]
FilerKind = Literal["operator", "facilitator"]
Status = Literal["on_time", "late", "flagged"]


class Filer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: FilerKind
    id: str = Field(min_length=1, max_length=100)


class DeclaredLines(BaseModel):
    """The lines of the monthly return (taxcore ``DeclarationInput`` fields)."""

    model_config = ConfigDict(extra="forbid")
    room_revenue: Money = Decimal(0)
    paid_unused_rooms: Money = Decimal(0)
    room_penalties: Money = Decimal(0)
    resort_and_other_fees: Money = Decimal(0)
    surcharges_and_service_charges: Money = Decimal(0)
    intermediary_retained: Money = Decimal(0)
    all_inclusive_global_charges: Money = Decimal(0)
    comp_rooms: list[CompValuation] = Field(default_factory=list, max_length=50)
    exempt: list[ExemptAmount] = Field(default_factory=list, max_length=50)
    room_nights: int = Field(default=0, ge=0, le=100_000_000)
    timeshare_owner_unit_days: int = Field(default=0, ge=0, le=100_000_000)
    tax_itemized: bool = True
    books_kept: bool = True


class DeclaredFigures(BaseModel):
    """What the filer says the lines come to (blank = not declared)."""

    model_config = ConfigDict(extra="forbid")
    taxable_base: Money | None = None
    tax: Money | None = None
    impact_fee: Money | None = None
    total: Money | None = None
    line_total: Money | None = None


class DeclarationAmend(DeclaredLines):
    declared: DeclaredFigures
    received_on: date | None = Field(
        default=None, description="agency-admin only: the day a paper return was received (default today)"
    )


class DeclarationCreate(DeclarationAmend):
    lodging: str = Field(min_length=1, max_length=100, description="tax account number or lodging id")
    period: PeriodStr
    filer: Filer | None = Field(
        default=None,
        description="agency-admin only: the operator or facilitator the return is filed for; "
        "other callers file as themselves",
    )


class LodgingRef(BaseModel):
    lodging_id: str
    tax_account: str
    jurisdiction: str
    lodging_class: str
    casino: bool
    name: str | None = None


class Computed(BaseModel):
    gross_receipts: Decimal
    exempt_total: Decimal
    taxable_base: Decimal
    rate: Decimal
    tax: Decimal
    impact_fee: Decimal
    total_due: Decimal
    currency: str = "USD"


class FindingOut(BaseModel):
    code: str
    line: str
    message: str
    declared: Decimal | None = None
    computed: Decimal | None = None
    section: str


class DeclarationOut(BaseModel):
    id: str
    filing_id: str
    version: int
    supersedes: str | None
    latest: bool
    lodging: LodgingRef
    period: str
    filer: Filer
    schedule_id: str | None
    schedule_row: int | None
    filed_on: date
    due_date: date
    late: bool
    flagged: bool
    status: Literal["on_time", "late"]
    submitted: dict[str, Any] = Field(description="the lines as the filer sent them")
    input: dict[str, Any] = Field(description="the taxcore DeclarationInput the service computed with")
    computed: Computed
    declared: DeclaredFigures
    tax_difference: Decimal | None = Field(description="declared tax minus computed tax")
    findings: list[FindingOut]
    trace: list[dict[str, Any]] | None = Field(default=None, description="with ?explain=true")
    submitted_by: str
    created_at: datetime


class FilerCoverage(BaseModel):
    filer: Filer
    declaration_id: str
    version: int
    filed_on: date
    late: bool
    flagged: bool
    room_nights: int
    taxable_base: Decimal
    tax: Decimal
    impact_fee: Decimal
    total_due: Decimal
    declared_tax: Decimal | None
    declared_total: Decimal | None


class PeriodTotals(BaseModel):
    room_nights: int
    taxable_base: Decimal
    tax: Decimal
    impact_fee: Decimal
    total_due: Decimal
    declared_tax: Decimal


class PayerPaid(BaseModel):
    payer: Filer
    amount: Decimal


class LodgingPeriodOut(BaseModel):
    """What each filer covered for one lodging-period, and what was paid for it."""

    lodging: LodgingRef
    period: str
    due_date: date
    filers: list[FilerCoverage]
    totals: PeriodTotals
    paid_for_period: Decimal = Field(description="payments designated for this period, net of reversals")
    paid_by: list[PayerPaid]
