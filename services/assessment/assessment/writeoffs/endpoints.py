"""Write-offs: propose (maker-checker approval through /v1/proposals), read, reverse."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field

from assessment.accounts import repository as accounts_repo
from assessment.casework import approvals
from assessment.casework.endpoints import SettingsDep
from assessment.casework.schemas import ProposalOut
from assessment.deps import FactsDep
from assessment.writeoffs import service
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed

router = make_router(prefix="/v1", tags=["write-offs"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


class WriteOffCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    period: str = Field(pattern=r"^\d{4}-\d{2}$")
    reason: Literal["business_closed", "bankrupt", "uncollectible", "limitation_passed"]
    explanation: str = Field(min_length=1, max_length=10_000)


class ReversalCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=10_000)


class WriteOffOut(BaseModel):
    write_off_id: str
    tax_account: str
    period: str
    effective_on: date
    reason: str
    section: str
    proposed_by: str | None
    approved_by: str
    reversed_on: date | None
    reversal_reason: str | None


@router.post(
    "/accounts/{tax_account}/write-offs",
    status_code=201,
    response_model=ProposalOut,
    responses=ERRORS,
    summary="Propose writing off a period's uncollectible balance (another agency person approves)",
)
async def propose_write_off(
    body: WriteOffCreate, facts: FactsDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> ProposalOut:
    approvals.require_agency_staff(principal, "write off a balance")
    await accounts_repo.lock_account(session, facts.tax_account)
    proposal = await service.propose(
        session,
        facts=facts,
        principal=principal,
        settings=settings,
        period=body.period,
        reason=body.reason,
        explanation=body.explanation,
    )
    return ProposalOut.of(proposal, None, settings)


@router.get("/write-offs/{write_off_id}", response_model=WriteOffOut, responses=ERRORS, summary="A write-off")
async def show_write_off(
    session: SessionDep, principal: PrincipalDep, write_off_id: Annotated[str, Path()]
) -> WriteOffOut:
    fact = await service.get_fact(session, fact_id=write_off_id)
    facts = await accounts_repo.load_facts(session, fact.tax_account)
    if facts is None or not accounts_repo.visible(principal, facts.lodging):
        raise NotFound(f"no write-off {write_off_id!r}")
    return WriteOffOut.model_validate(await service.out(session, fact=fact))


@router.post(
    "/write-offs/{write_off_id}/reversal",
    response_model=WriteOffOut,
    responses=ERRORS,
    summary="Reverse a write-off (money appeared): owed again and accruing from today",
)
async def reverse_write_off(
    body: ReversalCreate,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    write_off_id: Annotated[str, Path()],
) -> WriteOffOut:
    fact = await service.get_fact(session, fact_id=write_off_id)
    facts = await accounts_repo.load_facts(session, fact.tax_account)
    if facts is None or not accounts_repo.visible(principal, facts.lodging):
        raise NotFound(f"no write-off {write_off_id!r}")
    approvals.require_agency_staff(principal, "write off a balance")
    await accounts_repo.lock_account(session, fact.tax_account)
    await service.reverse(
        session, facts=facts, fact=fact, principal=principal, settings=settings, reason=body.reason
    )
    return WriteOffOut.model_validate(await service.out(session, fact=fact))
