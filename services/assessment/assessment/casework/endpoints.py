"""Maker-checker endpoints: the proposals awaiting a second person, and their review."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query

from assessment.casework import approvals, repository
from assessment.casework.models import Proposal
from assessment.casework.schemas import ProposalOut, ReviewCreate
from assessment.deps import CaseWork, SettingsDep, WorkDep
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed

router = make_router(prefix="/v1/proposals", tags=["maker-checker"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_proposal(
    session: SessionDep, principal: AgencyReadDep, proposal_id: Annotated[str, Path()]
) -> Proposal:
    proposal = await repository.proposal(session, proposal_id)
    if proposal is None:
        raise NotFound(f"no proposal {proposal_id!r}")
    return proposal


ProposalDep = Annotated[Proposal, Depends(get_proposal)]


@router.get("", summary="Proposals (agency): pending oldest first, then reviewed newest first")
async def list_proposals(
    session: SessionDep,
    principal: AgencyReadDep,
    settings: SettingsDep,
    tax_account: Annotated[str | None, Query()] = None,
    status: Annotated[str | None, Query(pattern="^(pending|approved|rejected)$")] = None,
) -> list[ProposalOut]:
    rows = await repository.listed_proposals(session, tax_account=tax_account, status=status)
    reviews = await repository.reviews_of(session, [p.id for p in rows])
    return [ProposalOut.of(p, reviews.get(p.id), settings) for p in rows]


@router.get("/{proposal_id}", responses=ERRORS, summary="One proposal")
async def show_proposal(proposal: ProposalDep, session: SessionDep, settings: SettingsDep) -> ProposalOut:
    return ProposalOut.of(proposal, await repository.review_of(session, proposal.id), settings)


async def _review(outcome: str, body: ReviewCreate, proposal: Proposal, w: CaseWork) -> ProposalOut:
    review = await approvals.review(
        w.session,
        proposal,
        principal=w.principal,
        outcome=outcome,
        note=body.note,
        settings=w.settings,
        today=w.today,
    )
    return ProposalOut.of(proposal, review, w.settings)


@router.post(
    "/{proposal_id}/approve",
    responses=ERRORS,
    summary="Approve another person's proposal (maker-checker); the action takes effect today",
)
async def approve(body: ReviewCreate, proposal: ProposalDep, w: WorkDep) -> ProposalOut:
    return await _review("approved", body, proposal, w)


@router.post(
    "/{proposal_id}/reject",
    responses=ERRORS,
    summary="Reject another person's proposal, saying why; nothing changes",
)
async def reject(body: ReviewCreate, proposal: ProposalDep, w: WorkDep) -> ProposalOut:
    return await _review("rejected", body, proposal, w)
