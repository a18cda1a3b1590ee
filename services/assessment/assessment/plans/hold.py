"""Whether a current payment plan holds collection of a period (read by notices and bond draws).

Kept apart from ``plans.service`` so that the notices can ask it without importing the
use-case that issues a notice when a plan defaults.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts.ledger import Facts
from assessment.plans import repository
from assessment.plans.models import PaymentPlan, PlanInstallment
from assessment.plans.schedule import PlanState, Receipt, Term, evaluate
from taxcore.money import ZERO


def receipts(facts: Facts, plan: PaymentPlan) -> list[Receipt]:
    """The account's money that counts toward ``plan`` (``plans.schedule``'s docstring)."""
    covered = set(plan.periods)
    out: list[Receipt] = []
    counted: dict[str, Receipt] = {}
    for p in sorted(facts.payments, key=lambda p: (p.received_on, p.payment_id)):
        if p.received_on <= plan.balance_as_of:
            continue
        elsewhere = sum((Decimal(d["amount"]) for d in p.designations if d["period"] not in covered), ZERO)
        amount = max(p.amount - elsewhere, ZERO)
        if amount > 0:
            counted[p.payment_id] = Receipt(p.received_on, amount, p.payment_id)
            out.append(counted[p.payment_id])
    # a reversal takes back what is left of the payment's counted amount, never more: filing
    # reverses a payment once, but the ledger (``_pieces``) sums several, and so does this
    left = {pid: r.amount for pid, r in counted.items()}
    for rv in sorted(facts.reversals, key=lambda rv: (rv.reversed_on, rv.reversal_id)):
        r = counted.get(rv.payment_id)
        if r is not None and left[rv.payment_id] > 0:
            back = min(rv.amount, left[rv.payment_id])
            left[rv.payment_id] -= back
            out.append(Receipt(max(rv.reversed_on, r.on), -back, rv.reversal_id))
    return out


def terms(rows: list[PlanInstallment]) -> list[Term]:
    return [Term(r.number, r.due_on, r.amount) for r in rows]


def state(facts: Facts, plan: PaymentPlan, rows: list[PlanInstallment], on: date) -> PlanState:
    return evaluate(terms(rows), receipts(facts, plan), grace_days=plan.grace_days, on=on)


async def plan_hold(session: AsyncSession, facts: Facts, period: str, on: date) -> str | None:
    """Why collection of ``period`` waits on ``on`` (a plan current on that day), or None."""
    plans = [
        p
        for p in await repository.account_plans(session, facts.tax_account)
        if period in p.periods and p.granted_on <= on
    ]
    if not plans:
        return None
    schedules = await repository.installments(session, [p.id for p in plans])
    for plan in plans:
        if state(facts, plan, schedules[plan.id], on).status == "current":
            return f"payment plan {plan.id} is current"
    return None
