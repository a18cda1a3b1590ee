"""Abatement of a period's penalty, interest or fine (PR §46; VI §54(i)).

The taxpayer (operator) or an agency person requests it with a ground
(reasonable cause, agency error) and an explanation; an agency person decides:
``deny`` (one person: it lowers nothing), ``full`` or ``partial`` (proposed by one
person and approved by another, maker-checker). An approved abatement is an
adjustment fact on the named component, effective on the decision date; the
statement's explain shows it with who proposed and approved it and why.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.abatements.schemas import AbatementCreate, AbatementDecisionCreate, AbatementOut
from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts
from assessment.casework import approvals, law, repository, work
from assessment.casework import facts as adjustments
from assessment.casework.facts import balances_on
from assessment.casework.models import (
    AbatementDecision,
    AbatementRequest,
    AdjustmentFact,
    Proposal,
    ProposalReview,
)
from assessment.rows import from_row
from assessment.settings import AssessmentSettings
from servicekit.auth import Principal
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from taxcore.events.cases import AbatementDecided, AbatementRequested
from taxcore.money import ZERO, fmt
from taxcore.parameters import ParameterTree


def _at_most_outstanding(facts: Facts, period: str, component: str, amount: Decimal, *, today: date) -> None:
    """A 422 on ``amount`` when more is abated than the component has outstanding today."""
    bal = balances_on(facts, period, today)
    if bal is None:
        raise ValidationFailed.on("period", f"the account has no liability for {period}")
    outstanding = sum((c.outstanding for c in bal.components if c.component == component), ZERO)
    if amount > outstanding:
        raise ValidationFailed.on(
            "amount", f"{fmt(amount)} is more than the {component} outstanding ({fmt(outstanding)})"
        )


async def request(
    session: AsyncSession,
    *,
    facts: Facts,
    principal: Principal,
    settings: AssessmentSettings,
    ask: AbatementCreate,
    today: date,
) -> AbatementRequest:
    """Record the taxpayer's or an agency person's request (no more than is outstanding)."""
    if principal.role == "operator":
        by = principal.actor
    elif principal.is_agency:
        by = f"user:{approvals.may_propose(principal, settings)}"
    else:
        raise Forbidden("the taxpayer (operator) or agency staff request an abatement")
    _at_most_outstanding(facts, ask.period, ask.component, ask.amount, today=today)
    row = AbatementRequest(
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        period=ask.period,
        component=ask.component,
        amount=ask.amount,
        ground=ask.ground,
        explanation=ask.explanation,
        requested_on=today,
        requested_by=by,
    )
    return await work.add_and_emit(
        session, row, requested_event, key=facts.tax_account, event_key=lambda r: ("abatement", r.id)
    )


def requested_event(row: AbatementRequest) -> AbatementRequested:
    return from_row(AbatementRequested, row, abatement_id=row.id)


async def _record_decision(
    session: AsyncSession,
    abatement: AbatementRequest,
    *,
    outcome: str,
    amount: Decimal,
    reasons: str,
    decided_by: str,
    proposed_by: str,
    today: date,
    tree: ParameterTree,
) -> AbatementDecision:
    row = AbatementDecision(
        abatement_id=abatement.id,
        tax_account=abatement.tax_account,
        outcome=outcome,
        amount=amount,
        reasons=reasons,
        decided_on=today,
        decided_by=decided_by,
        proposed_by=proposed_by,
    )
    return await work.add_and_emit(
        session,
        row,
        lambda r: decided_event(abatement, r, tree),
        key=abatement.tax_account,
        event_key=lambda r: ("abatement-decision", r.abatement_id),
    )


def decided_event(
    abatement: AbatementRequest, row: AbatementDecision, tree: ParameterTree
) -> AbatementDecided:
    return from_row(
        AbatementDecided,
        row,
        period=abatement.period,
        component=abatement.component,
        approved_by=row.decided_by,
        section=law.section(abatement.jurisdiction, "abatement", row.decided_on, law=tree),
    )


async def decide(
    session: AsyncSession,
    *,
    abatement: AbatementRequest,
    facts: Facts,
    principal: Principal,
    settings: AssessmentSettings,
    decision: AbatementDecisionCreate,
    today: date,
) -> Proposal | AbatementDecision:
    """Deny now, or propose a full or partial abatement for a second person's approval."""
    outcome, amount, reasons = decision.outcome, decision.amount, decision.reasons
    who = approvals.may_propose(principal, settings)
    if await session.get(AbatementDecision, abatement.id) is not None:
        raise approvals.conflict("the abatement request is already decided", "#/abatement/status")
    if outcome == "deny":
        if amount is not None:
            raise ValidationFailed.on("amount", "a denial abates nothing")
        return await _record_decision(
            session,
            abatement,
            outcome="deny",
            amount=ZERO,
            reasons=reasons,
            decided_by=who,
            proposed_by=who,
            today=today,
            tree=facts.law,
        )
    if outcome == "full":
        if amount is not None and amount != abatement.amount:
            raise ValidationFailed.on(
                "amount", f"a full abatement is the amount requested ({fmt(abatement.amount)})"
            )
        amount = abatement.amount
    elif amount is None or amount <= 0 or amount >= abatement.amount:
        raise ValidationFailed.on(
            "amount", f"a partial abatement is more than 0 and less than requested ({fmt(abatement.amount)})"
        )
    _at_most_outstanding(facts, abatement.period, abatement.component, amount, today=today)
    return await approvals.propose(
        session,
        tax_account=abatement.tax_account,
        period=abatement.period,
        action="abatement.decide",
        subject_id=abatement.id,
        amount=amount,
        payload={"outcome": outcome, "amount": fmt(amount), "reasons": reasons},
        principal=principal,
        settings=settings,
        today=today,
    )


@approvals.executor("abatement.decide")
async def _execute(session: AsyncSession, proposal: Proposal, review: ProposalReview) -> None:
    abatement = await session.get(AbatementRequest, proposal.subject_id)
    if abatement is None:  # pragma: no cover
        raise NotFound(f"no abatement request {proposal.subject_id!r}")
    if await session.get(AbatementDecision, abatement.id) is not None:
        raise Conflict("the abatement request is already decided")
    facts = await accounts_repo.load_facts(session, abatement.tax_account)
    assert facts is not None
    amount = Decimal(str(proposal.payload["amount"]))
    reasons = str(proposal.payload["reasons"])
    on = review.reviewed_on
    fact = AdjustmentFact(
        tax_account=abatement.tax_account,
        jurisdiction=abatement.jurisdiction,
        period=abatement.period,
        kind="abate",
        component=abatement.component,
        amount=amount,
        effective_on=on,
        section=law.section(abatement.jurisdiction, "abatement", on, law=facts.law),
        reason=f"{abatement.ground}: {reasons}",
        proposed_by=proposal.proposed_by,
        approved_by=review.reviewed_by,
        source_kind="abatement",
        source_id=abatement.id,
    )
    await adjustments.record(session, facts, [fact], field="amount")
    await _record_decision(
        session,
        abatement,
        outcome=str(proposal.payload["outcome"]),
        amount=amount,
        reasons=reasons,
        decided_by=review.reviewed_by,
        proposed_by=proposal.proposed_by,
        today=on,
        tree=facts.law,
    )


async def view(session: AsyncSession, *, abatement: AbatementRequest) -> AbatementOut:
    """The request as it stands (its decision, or the proposal awaiting approval)."""
    decision = await session.get(AbatementDecision, abatement.id)
    pending = await approvals.pending_of(session, abatement.id, "abatement.decide")
    return AbatementOut.of(abatement, decision, pending)


async def account_views(session: AsyncSession, *, tax_account: str) -> list[AbatementOut]:
    """The account's abatement requests, each as it stands."""
    return [
        await view(session, abatement=r) for r in await repository.account_abatements(session, tax_account)
    ]
