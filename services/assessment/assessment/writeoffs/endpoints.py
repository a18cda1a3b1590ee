"""Write-offs: propose (maker-checker approval through /v1/proposals), read, reverse."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from assessment.accounts.ledger import Facts
from assessment.casework import work
from assessment.casework.models import AdjustmentFact
from assessment.casework.schemas import ProposalOut
from assessment.deps import FactsDep, WorkDep
from assessment.writeoffs import service
from assessment.writeoffs.schemas import ReversalCreate, WriteOffCreate, WriteOffOut
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed

router = make_router(prefix="/v1", tags=["write-offs"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_write_off(
    session: SessionDep, principal: PrincipalDep, write_off_id: Annotated[str, Path()]
) -> tuple[AdjustmentFact, Facts]:
    fact = await service.get_fact(session, fact_id=write_off_id)
    return fact, await work.visible_facts(session, principal, fact, f"no write-off {write_off_id!r}")


WriteOffDep = Annotated[tuple[AdjustmentFact, Facts], Depends(get_write_off)]


@router.post(
    "/accounts/{tax_account}/write-offs",
    status_code=201,
    responses=ERRORS,
    summary="Propose writing off a period's uncollectible balance (another agency person approves)",
)
async def propose_write_off(body: WriteOffCreate, facts: FactsDep, w: WorkDep) -> ProposalOut:
    await w.staff_lock(facts.tax_account, what="write off a balance")
    proposal = await service.propose(
        w.session, facts=facts, principal=w.principal, settings=w.settings, ask=body, today=w.today
    )
    return ProposalOut.of(proposal, None, w.settings)


@router.get("/write-offs/{write_off_id}", responses=ERRORS, summary="A write-off")
async def show_write_off(found: WriteOffDep, session: SessionDep) -> WriteOffOut:
    return await service.view(session, fact=found[0])


@router.post(
    "/write-offs/{write_off_id}/reversal",
    responses=ERRORS,
    summary="Reverse a write-off (money appeared): owed again and accruing from today",
)
async def reverse_write_off(body: ReversalCreate, found: WriteOffDep, w: WorkDep) -> WriteOffOut:
    fact, facts = found
    await w.staff_lock(fact.tax_account, what="write off a balance")
    await service.reverse(
        w.session,
        facts=facts,
        fact=fact,
        principal=w.principal,
        settings=w.settings,
        reason=body.reason,
        today=w.today,
    )
    return await service.view(w.session, fact=fact)
