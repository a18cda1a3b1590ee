from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from assessment.casework.schemas import WorkStepOut
from assessment.rows import from_row
from taxcore.money import Money, PositiveMoney

if TYPE_CHECKING:
    from assessment.plans.models import PaymentPlan, PlanRequest, PlanStep
    from assessment.plans.schedule import InstallmentState, PlanState


class LineIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    due_on: date
    amount: PositiveMoney


class EqualInstallments(BaseModel):
    """Installments of one amount, monthly from ``first_due_on``: what the agency's screen
    grants. The cents that do not divide evenly go on the last installment."""

    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=1, le=120)
    first_due_on: date = Field(
        description="the first installment's due date; each next one falls on the same day of the "
        "next month (its last day where the month is shorter)"
    )


class PlanCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    as_of: date | None = Field(default=None, description="the balance date (default today)")
    periods: list[Annotated[str, Field(pattern=r"^\d{4}-(0[1-9]|1[0-2])$")]] | None = Field(
        default=None,
        min_length=1,
        max_length=600,
        description="periods planned (default every period owing on as_of)",
    )
    down_payment: LineIn | None = None
    installments: list[LineIn] | None = Field(
        default=None, min_length=1, max_length=120, description="or equal_installments, not both"
    )
    equal_installments: EqualInstallments | None = Field(
        default=None, description="the balance left after the down payment, split evenly"
    )
    request_id: str | None = Field(
        default=None, max_length=64, description="the taxpayer's request this grants"
    )


class InstallmentOut(BaseModel):
    number: int = Field(description="0: the down payment")
    due_on: date
    amount: Money
    paid: Money
    paid_on: date | None
    status: Literal["paid", "due", "late", "missed"]
    grace_ends_on: date
    reopened_on: date | None = Field(
        description="unpaid again from this day: money that had paid it was returned (null while "
        "paid, or if it never was)"
    )

    @classmethod
    def of(cls, i: InstallmentState, *, grace_days: int) -> InstallmentOut:
        return from_row(
            cls,
            i.term,
            paid=i.paid,
            paid_on=i.paid_on,
            status=i.status,
            grace_ends_on=i.term.due_on + timedelta(days=grace_days),
            reopened_on=i.reopened_on,
        )


class PlanStepOut(WorkStepOut):
    pass


class PlanOut(BaseModel):
    id: str
    tax_account: str
    jurisdiction: str
    periods: list[str]
    balance_as_of: date
    planned_amount: Money
    granted_on: date
    granted_by: str
    request_id: str | None
    grace_days: int
    section: str
    as_of: date
    status: Literal["current", "completed", "defaulted"]
    status_since: date | None
    paid: Money
    remaining: Money
    schedule: list[InstallmentOut]
    steps: list[PlanStepOut]

    @classmethod
    def of(cls, plan: PaymentPlan, current: PlanState, steps: list[PlanStep], *, on: date) -> PlanOut:
        """The plan as granted, and where its schedule stands on ``on``."""
        return from_row(
            cls,
            plan,
            as_of=on,
            status=current.status,
            status_since=current.since,
            paid=current.paid,
            remaining=plan.planned_amount - min(current.paid, plan.planned_amount),
            schedule=[InstallmentOut.of(i, grace_days=plan.grace_days) for i in current.installments],
            steps=[PlanStepOut.model_validate(s) for s in steps],
        )


class PlanRequestCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    installments: int = Field(ge=1, le=120)
    explanation: str = Field(min_length=1, max_length=10_000)


class DeclineCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reasons: str = Field(min_length=1, max_length=10_000)


class DeclinedOut(BaseModel):
    on: date
    by: str
    reasons: str


class PlanRequestOut(BaseModel):
    id: str
    tax_account: str
    installments: int
    explanation: str
    requested_on: date
    requested_by: str
    status: Literal["pending", "granted", "declined"]
    plan_id: str | None
    declined: DeclinedOut | None

    @classmethod
    def of(cls, req: PlanRequest, plan: PaymentPlan | None, declined: PlanStep | None) -> PlanRequestOut:
        """The request: granted once a plan names it, declined once its decline step exists."""
        return from_row(
            cls,
            req,
            status="granted" if plan is not None else "declined" if declined is not None else "pending",
            plan_id=plan.id if plan is not None else None,
            declined=(
                DeclinedOut(on=declined.on, by=declined.by, reasons=declined.details["reasons"])
                if declined
                else None
            ),
        )
