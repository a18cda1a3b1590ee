"""A refund after its request: review, approve or deny, pay (maker-checker on approval and payment)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from assessment import clock
from assessment.accounts.ledger import Facts
from assessment.casework import work
from assessment.casework.endpoints import SettingsDep
from assessment.deps import FactsDep
from assessment.models import Refund
from assessment.refunds import service
from assessment.refunds.schemas import RefundDecisionCreate, RefundPaymentCreate, RefundStatusOut
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed

router = make_router(prefix="/v1", tags=["refunds"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()}


async def get_refund(
    session: SessionDep, principal: PrincipalDep, refund_id: Annotated[str, Path()]
) -> tuple[Refund, Facts]:
    refund = await session.get(Refund, refund_id)
    facts = await work.visible_facts(session, principal, refund, f"no refund {refund_id!r}")
    assert refund is not None
    return refund, facts


RefundDep = Annotated[tuple[Refund, Facts], Depends(get_refund)]


@router.get(
    "/accounts/{tax_account}/refunds",
    response_model=list[RefundStatusOut],
    responses=ERRORS,
    summary="The account's refunds and where each stands (only a paid refund left the account)",
)
async def list_refunds(facts: FactsDep, session: SessionDep) -> list[RefundStatusOut]:
    rows = sorted(facts.refunds, key=lambda r: (r.requested_on, r.id))
    return [await service.view(session, facts=facts, refund=r) for r in rows]


@router.get("/refunds/{refund_id}", response_model=RefundStatusOut, responses=ERRORS, summary="One refund")
async def show_refund(found: RefundDep, session: SessionDep) -> RefundStatusOut:
    refund, facts = found
    return await service.view(session, facts=facts, refund=refund)


@router.post(
    "/refunds/{refund_id}/review", response_model=RefundStatusOut, responses=ERRORS, summary="Review"
)
async def review_refund(
    found: RefundDep, session: SessionDep, principal: PrincipalDep, settings: SettingsDep
) -> RefundStatusOut:
    refund, facts = found
    await work.staff_lock(session, principal, refund.tax_account, what="work a refund")
    await service.start_review(session, facts=facts, refund=refund, principal=principal, settings=settings)
    return await service.view(session, facts=facts, refund=refund)


@router.post(
    "/refunds/{refund_id}/decision",
    response_model=RefundStatusOut,
    responses=ERRORS,
    summary="Deny, or propose the approval for another agency person",
)
async def decide_refund(
    body: RefundDecisionCreate,
    found: RefundDep,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
) -> RefundStatusOut:
    refund, facts = found
    await work.staff_lock(session, principal, refund.tax_account, what="work a refund")
    await service.decide(
        session,
        facts=facts,
        refund=refund,
        principal=principal,
        settings=settings,
        outcome=body.outcome,
        reasons=body.reasons,
    )
    return await service.view(session, facts=facts, refund=refund)


@router.post(
    "/refunds/{refund_id}/payment",
    response_model=RefundStatusOut,
    responses=ERRORS,
    summary="Propose the disbursement (method, reference, date) for another agency person's approval",
)
async def pay_refund(
    body: RefundPaymentCreate,
    found: RefundDep,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
) -> RefundStatusOut:
    refund, facts = found
    await work.staff_lock(session, principal, refund.tax_account, what="work a refund")
    await service.propose_payment(
        session,
        facts=facts,
        refund=refund,
        principal=principal,
        settings=settings,
        method=body.method,
        reference=body.reference,
        paid_on=body.paid_on or clock.today(),
    )
    return await service.view(session, facts=facts, refund=refund)
