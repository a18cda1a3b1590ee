"""Abatement requests and their decision (maker-checker for full and partial)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from assessment.abatements import service
from assessment.abatements.schemas import AbatementCreate, AbatementDecisionCreate, AbatementOut
from assessment.casework import work
from assessment.casework.models import AbatementRequest
from assessment.deps import FactsDep, WorkDep
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed

router = make_router(prefix="/v1", tags=["abatements"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_abatement(
    session: SessionDep, principal: PrincipalDep, abatement_id: Annotated[str, Path()]
) -> AbatementRequest:
    row = await session.get(AbatementRequest, abatement_id)
    return await work.visible(session, principal, row, f"no abatement request {abatement_id!r}")


AbatementDep = Annotated[AbatementRequest, Depends(get_abatement)]


@router.post(
    "/accounts/{tax_account}/abatements",
    status_code=201,
    responses=ERRORS,
    summary="Request abatement of a period's penalty, interest or fine (reasonable cause, agency error)",
)
async def request_abatement(body: AbatementCreate, facts: FactsDep, w: WorkDep) -> AbatementOut:
    await w.lock(facts.tax_account)
    row = await service.request(
        w.session, facts=facts, principal=w.principal, settings=w.settings, ask=body, today=w.today
    )
    return await service.view(w.session, abatement=row)


@router.get(
    "/accounts/{tax_account}/abatements",
    responses=ERRORS,
    summary="The account's abatement requests",
)
async def list_abatements(facts: FactsDep, session: SessionDep) -> list[AbatementOut]:
    return await service.account_views(session, tax_account=facts.tax_account)


@router.get("/abatements/{abatement_id}", responses=ERRORS, summary="One request")
async def show_abatement(abatement: AbatementDep, session: SessionDep) -> AbatementOut:
    return await service.view(session, abatement=abatement)


@router.post(
    "/abatements/{abatement_id}/decision",
    responses=ERRORS,
    summary="Deny, or propose a full or partial abatement for another agency person's approval",
)
async def decide_abatement(
    body: AbatementDecisionCreate, abatement: AbatementDep, w: WorkDep
) -> AbatementOut:
    facts = await w.locked_facts(abatement.tax_account, staff="decide an abatement")
    await service.decide(
        w.session,
        abatement=abatement,
        facts=facts,
        principal=w.principal,
        settings=w.settings,
        decision=body,
        today=w.today,
    )
    return await service.view(w.session, abatement=abatement)
