"""Maker-checker: what lowers what is owed or pays money out needs two agency people.

One person proposes (:func:`propose`), another reviews (:func:`review`). The same
person cannot do both; roles decide who may propose and approve
(``case_proposer_roles``, ``case_approver_roles``) and above
``admin_approval_threshold`` only an agency-admin approves. A proposal is reviewed
once (its review row's primary key is the proposal id). On approval the action's
executor runs in the same transaction, so the review, the facts it writes and
their events commit together or not at all.

The person is the token's ``user_id``: a client token without one (a machine)
can neither propose nor approve.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository as accounts_repo
from assessment.casework import repository
from assessment.casework.events import event_id
from assessment.casework.models import Proposal, ProposalReview
from assessment.rows import from_row
from assessment.settings import AssessmentSettings
from servicekit.auth import Principal
from servicekit.errors import Conflict, Forbidden, ValidationFailed
from servicekit.outbox import emit
from taxcore.events.cases import ProposalMade, ProposalReviewed

Executor = Callable[[AsyncSession, Proposal, ProposalReview], Awaitable[None]]
EXECUTORS: dict[str, Executor] = {}


def executor(action: str) -> Callable[[Executor], Executor]:
    """Register what an approved proposal of ``action`` does (each domain registers its own)."""

    def register(fn: Executor) -> Executor:
        EXECUTORS[action] = fn
        return fn

    return register


def person(principal: Principal) -> str:
    """The person acting; case work is never done by a bare client token."""
    if not principal.user_id:
        raise Forbidden("case work is done by a person: the access token carries no user_id")
    return principal.user_id


def require_agency_staff(principal: Principal, what: str) -> None:
    """Agency staff work cases; read-only dashboards and taxpayers do not (403)."""
    if not principal.is_agency or principal.role == "dashboard":
        raise Forbidden(f"agency staff {what}")


def conflict(detail: str, pointer: str) -> Conflict:
    """A 409 naming what is in the way (``#/case/status``, ``#/body/period``, ...)."""
    return Conflict(detail, errors=[{"pointer": pointer, "detail": detail}])


def may_propose(principal: Principal, settings: AssessmentSettings) -> str:
    who = person(principal)
    if principal.role not in settings.case_proposer_roles:
        raise Forbidden(f"role {principal.role!r} may not propose case work")
    return who


async def propose(
    session: AsyncSession,
    *,
    tax_account: str,
    period: str | None,
    action: str,
    subject_id: str,
    amount: Decimal,
    payload: dict[str, Any],
    principal: Principal,
    settings: AssessmentSettings,
    today: date,
) -> Proposal:
    """Record a proposal (one pending per subject and action) and its event."""
    who = may_propose(principal, settings)
    pending = await pending_of(session, subject_id, action)
    if pending is not None:
        raise Conflict(
            f"proposal {pending.id} for this is already awaiting review",
            errors=[{"pointer": "#/proposal", "detail": f"pending proposal {pending.id}"}],
        )
    row = Proposal(
        tax_account=tax_account,
        period=period,
        action=action,
        subject_id=subject_id,
        amount=amount,
        payload=payload,
        proposed_by=who,
        proposed_role=principal.role,
        proposed_on=today,
    )
    session.add(row)
    await session.flush()
    await emit(session, made_event(row, settings), key=tax_account, event_id=event_id("proposal", row.id))
    return row


def made_event(row: Proposal, settings: AssessmentSettings) -> ProposalMade:
    return from_row(
        ProposalMade, row, proposal_id=row.id, admin_approval_required=settings.needs_admin(row.amount)
    )


async def pending_of(session: AsyncSession, subject_id: str, action: str) -> Proposal | None:
    proposals = [p for p in await repository.proposals_of(session, subject_id) if p.action == action]
    reviews = await repository.reviews_of(session, [p.id for p in proposals])
    return next((p for p in proposals if p.id not in reviews), None)


async def review(
    session: AsyncSession,
    proposal: Proposal,
    *,
    principal: Principal,
    outcome: str,
    note: str | None,
    settings: AssessmentSettings,
    today: date,
) -> ProposalReview:
    """The checker's decision; on approval the action runs (same transaction)."""
    who = person(principal)
    await accounts_repo.lock_account(session, proposal.tax_account)
    done = await session.get(ProposalReview, proposal.id)
    if done is not None:
        raise Conflict(
            f"proposal {proposal.id} was already {done.outcome} by {done.reviewed_by}",
            errors=[{"pointer": "#/proposal/status", "detail": f"already {done.outcome}"}],
        )
    if who == proposal.proposed_by:
        raise Conflict(
            "the person who proposed this cannot also approve or reject it (maker-checker)",
            errors=[{"pointer": "#/proposal/proposed_by", "detail": f"{who} proposed it"}],
        )
    if principal.role not in settings.case_approver_roles:
        raise Forbidden(f"role {principal.role!r} may not approve case work")
    if outcome == "approved" and settings.needs_admin(proposal.amount) and principal.role != "agency-admin":
        raise Forbidden(
            f"{proposal.amount} is above the {settings.admin_approval_threshold} threshold: "
            "an agency-admin approves it"
        )
    if outcome == "rejected" and not (note or "").strip():
        raise ValidationFailed.on("note", "say why the proposal is rejected")
    row = ProposalReview(
        proposal_id=proposal.id,
        outcome=outcome,
        reviewed_by=who,
        reviewed_role=principal.role,
        reviewed_on=today,
        note=note,
    )
    session.add(row)
    await session.flush()
    await emit(
        session,
        reviewed_event(proposal, row),
        key=proposal.tax_account,
        event_id=event_id("proposal-review", proposal.id),
    )
    if outcome == "approved":
        await EXECUTORS[proposal.action](session, proposal, row)
    return row


def reviewed_event(proposal: Proposal, row: ProposalReview) -> ProposalReviewed:
    return from_row(
        ProposalReviewed,
        row,
        tax_account=proposal.tax_account,
        action=proposal.action,
        subject_id=proposal.subject_id,
        proposed_by=proposal.proposed_by,
    )
