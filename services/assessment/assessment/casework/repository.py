"""Every query of case work: proposals and reviews, cases and steps, abatements, visibility."""

from __future__ import annotations

from sqlalchemy import case, select
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.casework.models import (
    AbatementDecision,
    AbatementRequest,
    AdjustmentFact,
    AdjustmentReversal,
    Case,
    CaseStep,
    FacilitatorAuthorization,
    Proposal,
    ProposalReview,
)
from assessment.models import LodgingView
from servicekit.auth import Principal


async def can_see(session: AsyncSession, principal: Principal, tax_account: str) -> bool:
    """Agency roles see all case work; an operator its own lodgings'; a facilitator the lodgings
    that authorized it (an authorization not ended)."""
    if principal.is_agency:
        return True
    if principal.role == "operator":
        lodging = await session.get(LodgingView, tax_account)
        return lodging is not None and lodging.operator_id == (principal.operator_id or "")
    if principal.role == "facilitator" and principal.facilitator_id:
        stmt = select(FacilitatorAuthorization.authorization_id).where(
            FacilitatorAuthorization.tax_account == tax_account,
            FacilitatorAuthorization.facilitator_id == principal.facilitator_id,
            FacilitatorAuthorization.ended.is_(False),
        )
        return (await session.execute(stmt.limit(1))).first() is not None
    return False


async def proposal(session: AsyncSession, proposal_id: str) -> Proposal | None:
    return await session.get(Proposal, proposal_id)


async def review_of(session: AsyncSession, proposal_id: str) -> ProposalReview | None:
    return await session.get(ProposalReview, proposal_id)


async def proposals_of(session: AsyncSession, subject_id: str) -> list[Proposal]:
    stmt = select(Proposal).where(Proposal.subject_id == subject_id).order_by(Proposal.seq)
    return list((await session.execute(stmt)).scalars().all())


async def reviews_of(session: AsyncSession, proposal_ids: list[str]) -> dict[str, ProposalReview]:
    if not proposal_ids:
        return {}
    stmt = select(ProposalReview).where(ProposalReview.proposal_id.in_(proposal_ids))
    return {r.proposal_id: r for r in (await session.execute(stmt)).scalars().all()}


async def account_proposals(session: AsyncSession, tax_account: str) -> list[Proposal]:
    stmt = select(Proposal).where(Proposal.tax_account == tax_account).order_by(Proposal.seq)
    return list((await session.execute(stmt)).scalars().all())


async def case_of_notice(session: AsyncSession, notice_id: str) -> Case | None:
    return (await session.execute(select(Case).where(Case.notice_id == notice_id))).scalar_one_or_none()


async def steps_of(session: AsyncSession, case_id: str) -> list[CaseStep]:
    stmt = select(CaseStep).where(CaseStep.case_id == case_id).order_by(CaseStep.seq)
    return list((await session.execute(stmt)).scalars().all())


async def account_cases(session: AsyncSession, tax_account: str) -> list[Case]:
    stmt = select(Case).where(Case.tax_account == tax_account).order_by(Case.opened_on, Case.id)
    return list((await session.execute(stmt)).scalars().all())


async def account_steps(session: AsyncSession, tax_account: str) -> list[CaseStep]:
    stmt = select(CaseStep).where(CaseStep.tax_account == tax_account).order_by(CaseStep.seq)
    return list((await session.execute(stmt)).scalars().all())


async def account_abatements(session: AsyncSession, tax_account: str) -> list[AbatementRequest]:
    stmt = select(AbatementRequest).where(AbatementRequest.tax_account == tax_account)
    return list((await session.execute(stmt.order_by(AbatementRequest.seq))).scalars().all())


async def account_abatement_decisions(session: AsyncSession, tax_account: str) -> list[AbatementDecision]:
    stmt = select(AbatementDecision).where(AbatementDecision.tax_account == tax_account)
    return list((await session.execute(stmt)).scalars().all())


QUEUE_LIMIT = 500  # a listing shows this many proposals, as the other work queues do


async def listed_proposals(
    session: AsyncSession, *, tax_account: str | None, status: str | None
) -> list[Proposal]:
    """At most ``QUEUE_LIMIT`` proposals (of one account when ``tax_account`` is set), filtered
    by ``status`` in the query: the pending ones oldest first (the maker-checker queue), then
    the reviewed ones newest first. Filtering after the limit would hide every proposal made
    after the first ``QUEUE_LIMIT``."""
    reviewed = ProposalReview.proposal_id.is_not(None)
    stmt = select(Proposal).outerjoin(ProposalReview, ProposalReview.proposal_id == Proposal.id)
    if tax_account:
        stmt = stmt.where(Proposal.tax_account == tax_account)
    if status == "pending":
        stmt = stmt.where(~reviewed)
    elif status is not None:
        stmt = stmt.where(ProposalReview.outcome == status)
    order = case((reviewed, -Proposal.seq), else_=Proposal.seq)
    stmt = stmt.order_by(reviewed, order).limit(QUEUE_LIMIT)
    return list((await session.execute(stmt)).scalars().all())


async def facts_of_source(session: AsyncSession, source_kind: str, source_id: str) -> list[AdjustmentFact]:
    stmt = select(AdjustmentFact).where(
        AdjustmentFact.source_kind == source_kind, AdjustmentFact.source_id == source_id
    )
    return list((await session.execute(stmt)).scalars().all())


async def reversal_of(session: AsyncSession, fact_id: str) -> AdjustmentReversal | None:
    return await session.get(AdjustmentReversal, fact_id)


async def account_facts(session: AsyncSession, tax_account: str) -> list[AdjustmentFact]:
    stmt = select(AdjustmentFact).where(AdjustmentFact.tax_account == tax_account)
    stmt = stmt.order_by(AdjustmentFact.effective_on, AdjustmentFact.seq)
    return list((await session.execute(stmt)).scalars().all())


async def account_reversals(session: AsyncSession, tax_account: str) -> list[AdjustmentReversal]:
    stmt = select(AdjustmentReversal).where(AdjustmentReversal.tax_account == tax_account)
    return list((await session.execute(stmt)).scalars().all())
