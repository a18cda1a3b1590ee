from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assessment.rows import from_row
from taxcore.money import Money, SignedMoney, fmt

if TYPE_CHECKING:
    from assessment.cases.service import NoticeDecision
    from assessment.law import Cited
    from assessment.models import BondDrawRequest, Notice, NoticeResponse
    from assessment.notices.service import NoticeStanding


class NoticeCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tax_account: str = Field(min_length=1, max_length=100)
    period: str = Field(pattern=r"^\d{4}-\d{2}$")
    reason: str = Field(min_length=1, max_length=2000)
    issued_on: date | None = None


class ResponseCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["accept", "dispute"]
    disputed_amount: Money = Decimal("0.00")
    statement: str | None = Field(default=None, max_length=5000)
    responded_on: date | None = None


class ResponseOut(BaseModel):
    id: str
    kind: str
    disputed_amount: Money
    undisputed_amount: Money
    statement: str | None
    responded_on: date

    @classmethod
    def of(cls, r: NoticeResponse) -> ResponseOut:
        return from_row(
            cls, r, disputed_amount=fmt(r.disputed_amount), undisputed_amount=fmt(r.undisputed_amount)
        )


class BondDrawRequestOut(BaseModel):
    amount: Money
    requested_on: date
    bond_id: str

    @classmethod
    def of(cls, request: BondDrawRequest) -> BondDrawRequestOut:
        return from_row(cls, request, amount=fmt(request.amount))


class NoticeCaseOut(BaseModel):
    case_id: str
    status: str
    outcome: Literal["sustain", "reduce", "cancel"]
    decided_on: date
    appeal_deadline: date
    decision_url: str

    @classmethod
    def of(cls, decided: NoticeDecision) -> NoticeCaseOut:
        return cls(
            case_id=decided.case.id,
            status=decided.case_status,
            outcome=decided.outcome,
            decided_on=decided.decided_on,
            appeal_deadline=decided.appeal_deadline,
            decision_url=f"/v1/cases/{decided.case.id}/decision.pdf",
        )


class NoticeOut(BaseModel):
    id: str
    tax_account: str
    jurisdiction: str
    period: str
    kind: Literal["deficiency", "clerical_error"]
    reason: str
    section: str
    issued_on: date
    response_deadline: date
    response_term: dict[str, Any]
    amounts: dict[str, SignedMoney]
    status: Literal[
        "open",
        "accepted",
        "disputed",
        "sustained",
        "reduced",
        "cancelled",
        "paid",
        "lapsed",
        "bond_draw_requested",
    ] = Field(
        description="disputed until its case is decided; then the decision (sustained, reduced, cancelled)"
    )
    case: NoticeCaseOut | None = Field(default=None, description="the case its dispute opened, once decided")
    balance: SignedMoney
    responses: list[ResponseOut]
    bond_draw_request: BondDrawRequestOut | None
    letter_url: str

    @classmethod
    def of(
        cls, notice: Notice, term: Cited, standing: NoticeStanding, decided: NoticeDecision | None
    ) -> NoticeOut:
        """The notice, its response term and amounts, and where it stands (with its case's decision)."""
        return from_row(
            cls,
            notice,
            response_term={
                "days": term.value,
                "section": term.section,
                "provisional": term.provisional,
                "note": term.note,
            },
            amounts={
                c: fmt(getattr(notice, c))
                for c in ("tax", "impact_fee", "penalty", "interest", "fine", "total")
            },
            status=standing.shown_with(decided),
            case=NoticeCaseOut.of(decided) if decided is not None else None,
            balance=fmt(standing.balance),
            responses=[ResponseOut.of(r) for r in standing.responses],
            bond_draw_request=BondDrawRequestOut.of(standing.draw_request) if standing.draw_request else None,
            letter_url=f"/v1/notices/{notice.id}/letter.pdf",
        )
