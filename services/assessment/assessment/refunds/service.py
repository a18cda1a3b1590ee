"""Refunds of credit, end to end (PR §42; the VI reading of the same terms):

    requested -> under_review -> approved | denied -> paid (method, reference, date)

Approval and payment each need two agency people (maker-checker): the approval is
proposed by one and approved by another, and so is the disbursement. Only a paid
refund takes money out of the account (the ledger counts it from its payment date);
an approved, unpaid refund is shown as such and the credit stays. The amount is
checked against the refundable credit when requested (less other open refunds) and
again, as of the payment date, when it is paid.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts.ledger import Facts, account_state
from assessment.casework import approvals
from assessment.casework.models import Proposal, ProposalReview, RefundStep
from assessment.models import Refund
from assessment.refunds.schemas import RefundDecisionCreate, RefundPaymentCreate, RefundStatusOut
from assessment.refunds.steps import FINAL, emit_step, status, steps_of
from assessment.settings import AssessmentSettings
from servicekit.auth import Principal
from servicekit.errors import Conflict, NotFound, ValidationFailed
from taxcore.money import ZERO, fmt


async def add_step(
    session: AsyncSession,
    *,
    facts: Facts,
    refund: Refund,
    step: str,
    on: date,
    by: str,
    details: dict[str, Any],
) -> RefundStep:
    row = RefundStep(
        refund_id=refund.id, tax_account=refund.tax_account, step=step, on=on, by=by, details=details
    )
    session.add(row)
    await session.flush()
    facts.refund_steps.append(row)
    await emit_step(session, facts, refund, step=step, on=on, by=by, row=row)
    return row


def _conflict(detail: str) -> Conflict:
    return approvals.conflict(detail, "#/refund/status")


async def start_review(
    session: AsyncSession,
    *,
    facts: Facts,
    refund: Refund,
    principal: Principal,
    settings: AssessmentSettings,
    today: date,
) -> RefundStep:
    who = approvals.may_propose(principal, settings)
    if status(facts, refund.id) != "requested":
        raise _conflict(f"the refund is {status(facts, refund.id)}, not requested")
    return await add_step(
        session,
        facts=facts,
        refund=refund,
        step="under_review",
        on=today,
        by=f"user:{who}",
        details={},
    )


async def decide(
    session: AsyncSession,
    *,
    facts: Facts,
    refund: Refund,
    principal: Principal,
    settings: AssessmentSettings,
    decision: RefundDecisionCreate,
    today: date,
) -> RefundStep | Proposal:
    """Deny now (one person), or propose the approval for a second person."""
    outcome, reasons = decision.outcome, decision.reasons
    who = approvals.may_propose(principal, settings)
    current = status(facts, refund.id)
    if current != "under_review":
        raise _conflict(f"the refund is {current}: it is decided once under review")
    if outcome == "deny":
        return await add_step(
            session,
            facts=facts,
            refund=refund,
            step="denied",
            on=today,
            by=f"user:{who}",
            details={"reasons": reasons},
        )
    return await approvals.propose(
        session,
        tax_account=refund.tax_account,
        period=None,
        action="refund.approve",
        subject_id=refund.id,
        amount=refund.amount,
        payload={"reasons": reasons},
        principal=principal,
        settings=settings,
        today=today,
    )


def _refundable_on(facts: Facts, refund: Refund, on: date) -> Decimal:
    state = account_state(facts, on)
    credit = sum((c.amount for c in state.credits if c.refundable_until >= refund.requested_on), ZERO)
    others = sum(
        (r.amount for r in facts.refunds if r.id != refund.id and status(facts, r.id) not in FINAL), ZERO
    )
    return credit - others


async def propose_payment(
    session: AsyncSession,
    *,
    facts: Facts,
    refund: Refund,
    principal: Principal,
    settings: AssessmentSettings,
    payment: RefundPaymentCreate,
    today: date,
) -> Proposal:
    """Propose the disbursement (on ``payment.paid_on``, default today) for a second person."""
    method, reference, paid_on = payment.method, payment.reference, payment.paid_on or today
    approvals.may_propose(principal, settings)
    if status(facts, refund.id) != "approved":
        raise _conflict(f"the refund is {status(facts, refund.id)}: only an approved refund is paid")
    if paid_on > today:
        raise ValidationFailed.on("paid_on", "is in the future")
    if paid_on < refund.requested_on:
        raise ValidationFailed.on("paid_on", "is before the request")
    available = _refundable_on(facts, refund, paid_on)
    if refund.amount > available:
        raise ValidationFailed.on(
            "amount",
            f"{fmt(refund.amount)} is more than the credit refundable on {paid_on} ({fmt(available)})",
        )
    return await approvals.propose(
        session,
        tax_account=refund.tax_account,
        period=None,
        action="refund.pay",
        subject_id=refund.id,
        amount=refund.amount,
        payload={"method": method, "reference": reference, "paid_on": paid_on.isoformat()},
        principal=principal,
        settings=settings,
        today=today,
    )


async def _load(session: AsyncSession, refund_id: str) -> tuple[Refund, Facts]:
    from assessment.accounts import repository as accounts_repo

    refund = await session.get(Refund, refund_id)
    facts = await accounts_repo.load_facts(session, refund.tax_account) if refund else None
    if refund is None or facts is None:  # pragma: no cover - proposals are made for existing refunds
        raise NotFound(f"no refund {refund_id!r}")
    return refund, facts


@approvals.executor("refund.approve")
async def _approve(session: AsyncSession, proposal: Proposal, review: ProposalReview) -> None:
    refund, facts = await _load(session, proposal.subject_id)
    if status(facts, refund.id) != "under_review":
        raise _conflict(f"the refund is {status(facts, refund.id)}")
    details = {
        "reasons": proposal.payload.get("reasons"),
        "proposed_by": proposal.proposed_by,
        "approved_by": review.reviewed_by,
    }
    await add_step(
        session,
        facts=facts,
        refund=refund,
        step="approved",
        on=review.reviewed_on,
        by=f"user:{review.reviewed_by}",
        details=details,
    )


@approvals.executor("refund.pay")
async def _pay(session: AsyncSession, proposal: Proposal, review: ProposalReview) -> None:
    from assessment.accounts.service import recompute

    refund, facts = await _load(session, proposal.subject_id)
    if status(facts, refund.id) != "approved":
        raise _conflict(f"the refund is {status(facts, refund.id)}")
    paid_on = date.fromisoformat(str(proposal.payload["paid_on"]))
    available = _refundable_on(facts, refund, paid_on)
    if refund.amount > available:
        raise ValidationFailed.on(
            "amount",
            f"{fmt(refund.amount)} is more than the credit refundable on {paid_on} ({fmt(available)})",
        )
    details = {
        "method": proposal.payload["method"],
        "reference": proposal.payload["reference"],
        "proposed_by": proposal.proposed_by,
        "approved_by": review.reviewed_by,
    }
    await add_step(
        session,
        facts=facts,
        refund=refund,
        step="paid",
        on=paid_on,
        by=f"user:{review.reviewed_by}",
        details=details,
    )
    await recompute(session, tax_account=refund.tax_account, facts=facts, refund_id=refund.id)


async def view(session: AsyncSession, *, facts: Facts, refund: Refund) -> RefundStatusOut:
    """The refund as it stands, with the approval or payment awaiting a second person if any."""
    pending = None
    for action in ("refund.approve", "refund.pay"):
        pending = pending or await approvals.pending_of(session, refund.id, action)
    return RefundStatusOut.of(refund, steps_of(facts, refund.id), pending)
