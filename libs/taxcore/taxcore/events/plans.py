"""Payment-plan events of assessment (topic ``assessment.cases``: plans are case work),
keyed by tax account number.

A plan (installment agreement) defers collection of the planned periods; it does not
change what they owe (interest keeps accruing), so none of these is an adjustment. Event
ids are derived from the rows they describe: a replay or a job run again publishes nothing.
"""

from __future__ import annotations

from datetime import date

from taxcore.events import EventData, contract
from taxcore.events.cases import CASES
from taxcore.money import Money, PositiveMoney


class InstallmentTerm(EventData):
    number: int  # 0: the down payment
    due_on: date
    amount: PositiveMoney


@contract("roomtax.assessment.plan.requested.v1", CASES)
class PlanRequested(EventData):
    """A taxpayer asked for a payment plan; the request waits in the agency's queue."""

    request_id: str
    tax_account: str
    installments: int
    requested_on: date
    requested_by: str


@contract("roomtax.assessment.plan.request.declined.v1", CASES)
class PlanRequestDeclined(EventData):
    request_id: str
    tax_account: str
    declined_on: date
    declined_by: str
    reasons: str


@contract("roomtax.assessment.plan.granted.v1", CASES)
class PlanGranted(EventData):
    """An agency person granted a plan for the balance of ``periods`` as of ``balance_as_of``;
    the down payment plus the installments add up to ``planned_amount``."""

    plan_id: str
    tax_account: str
    jurisdiction: str
    periods: list[str]
    balance_as_of: date
    planned_amount: PositiveMoney
    schedule: list[InstallmentTerm]
    grace_days: int
    granted_on: date
    granted_by: str
    request_id: str | None = None
    section: str


@contract("roomtax.assessment.plan.installment.paid.v1", CASES)
class PlanInstallmentPaid(EventData):
    """The account's payments since the plan reached the installment's cumulative amount."""

    plan_id: str
    tax_account: str
    number: int
    amount: PositiveMoney
    due_on: date
    paid_on: date


@contract("roomtax.assessment.plan.completed.v1", CASES)
class PlanCompleted(EventData):
    plan_id: str
    tax_account: str
    completed_on: date
    paid: Money


@contract("roomtax.assessment.plan.defaulted.v1", CASES)
class PlanDefaulted(EventData):
    """An installment stayed unpaid past the grace period: collection of the periods resumes
    and a notice of each period's deficiency is issued (``notice_ids``)."""

    plan_id: str
    tax_account: str
    defaulted_on: date
    number: int
    due_on: date
    unpaid: PositiveMoney
    grace_days: int
    notice_ids: list[str]
    section: str


@contract("roomtax.assessment.plan.installment.reopened.v1", CASES)
class PlanInstallmentReopened(EventData):
    """Money that paid the installment was returned (a payment reversed: a dishonoured cheque, a
    returned transfer), so it is unpaid again from ``reopened_on``: ``unpaid`` is what it lacks.
    Paid by ``pay_by`` (its grace's last day, or the return's day if that is later) the plan stays
    current; else it defaults the day after. A later payment pays it again (a new
    ``installment.paid``)."""

    plan_id: str
    tax_account: str
    number: int
    amount: PositiveMoney
    due_on: date
    paid_on: date  # the day it had been paid
    reopened_on: date
    unpaid: PositiveMoney
    pay_by: date
    reversal_id: str | None = None
    payment_id: str | None = None


@contract("roomtax.assessment.plan.reopened.v1", CASES)
class PlanReopened(EventData):
    """A plan recorded as completed is not any more: money that counted toward it was returned,
    so ``paid`` is below the planned amount by ``remaining``. Its installments unpaid again each
    have their ``installment.reopened``; the plan is current (or defaults) as its schedule says."""

    plan_id: str
    tax_account: str
    reopened_on: date
    paid: Money
    remaining: PositiveMoney
    reversal_id: str | None = None
