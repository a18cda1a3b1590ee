"""Declaration API models. Money is sent and returned as strings ("1234.50")."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from taxcore.lines import CountLines, MoneyLines
from taxcore.money import Money, SignedMoney
from taxcore.rules.declaration import CompValuation, ExemptAmount

__all__ = ["Money", "SignedMoney"]  # re-exported for the other filing schemas

#: Length limits of free text in requests (README "Using the APIs").
EVIDENCE_MAX = 2000


_M = TypeVar("_M", bound=BaseModel)
_set_attribute = object.__setattr__
_BUILDABLE: set[type[BaseModel]] = set()


def built(cls: type[_M], values: dict[str, Any], fields_set: set[str] | None = None) -> _M:
    """An instance of ``cls`` holding ``values``: EVERY field of ``cls``, in its order, each
    value already what validating it gives (taken from a model that validated the same
    types: a request's lines, a schedule row's). What ``cls(**values)`` builds, without
    validating the values again (``fields_set``: the fields given explicitly; by default all).

    For a schedule's rows, where validating each model again costs more than all the rest
    of its building (``DeclarationInput``: 5.6 us validated, 8.8 us by ``model_construct``,
    whose loop over the fields is Python, ~1.5 us this way). Only for models without
    private attributes, ``extra="allow"`` or a ``model_post_init`` (checked once per class)."""
    if cls not in _BUILDABLE:
        if (
            cls.__private_attributes__
            or cls.__pydantic_post_init__
            or cls.model_config.get("extra") == "allow"
        ):
            raise TypeError(f"{cls.__qualname__} is not built without validation")
        _BUILDABLE.add(cls)
    instance = cls.__new__(cls)
    _set_attribute(instance, "__dict__", values)
    _set_attribute(instance, "__pydantic_fields_set__", set(values) if fields_set is None else fields_set)
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


def json_values(model: BaseModel, include: set[str] | None = None) -> dict[str, Any]:
    """``model.model_dump(mode="json", include=include)``, by the model's serializer itself:
    ``model_dump`` passes its fifteen keywords on in Python (~1 us a call; a schedule row
    dumps three models)."""
    values: dict[str, Any] = type(model).__pydantic_serializer__.to_python(
        model, mode="json", include=include
    )
    return values


PeriodStr = Annotated[str, Field(pattern=r"^\d{4}-\d{2}$", examples=["2026-10"])]
FilerKind = Literal["operator", "facilitator"]
Status = Literal["on_time", "late", "flagged"]


class Filer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: FilerKind
    id: str = Field(min_length=1, max_length=100)


class CompRoomsIn(CompValuation):
    """A comp or bundled valuation line as the API takes it (amounts as :data:`Money`)."""

    room_nights: int = Field(ge=0, le=100_000_000)
    average_daily_rate: Money
    room_cost: Money
    industry_cost: Money


class ExemptIn(ExemptAmount):
    """An exempt amount as the API takes it (amount as :data:`Money`, bounded evidence)."""

    amount: Money
    evidence: str | None = Field(default=None, max_length=EVIDENCE_MAX, description="the certificate number")


class _Adjustments(BaseModel):
    comp_rooms: list[CompRoomsIn] = Field(default_factory=list, max_length=50)
    exempt: list[ExemptIn] = Field(default_factory=list, max_length=50)


class DeclaredLines(CountLines, _Adjustments, MoneyLines):  # fields: money, adjustments, counts, books
    """The lines of the monthly return (taxcore ``DeclarationInput`` fields)."""

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
    gross_receipts: Money
    exempt_total: Money
    taxable_base: Money
    rate: Decimal
    tax: Money
    impact_fee: Money
    total_due: Money
    currency: str = "USD"


class FindingOut(BaseModel):
    code: str
    line: str
    message: str
    declared: SignedMoney | None = None
    computed: SignedMoney | None = None
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
    tax_difference: SignedMoney | None = Field(description="declared tax minus computed tax")
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
    taxable_base: Money
    tax: Money
    impact_fee: Money
    total_due: Money
    declared_tax: Money | None
    declared_total: Money | None


class PeriodTotals(BaseModel):
    room_nights: int
    taxable_base: Money
    tax: Money
    impact_fee: Money
    total_due: Money
    declared_tax: Money


class PayerPaid(BaseModel):
    payer: Filer
    amount: SignedMoney


class LodgingPeriodOut(BaseModel):
    """What each filer covered for one lodging-period, and what was paid for it."""

    lodging: LodgingRef
    period: str
    due_date: date
    filers: list[FilerCoverage]
    totals: PeriodTotals
    paid_for_period: SignedMoney = Field(description="payments designated for this period, net of reversals")
    paid_by: list[PayerPaid]
