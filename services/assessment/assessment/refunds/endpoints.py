"""A refund after its request: review, approve or deny, pay (maker-checker on approval and payment)."""

from __future__ import annotations

from datetime import date
from functools import partial
from typing import Annotated, Protocol

from fastapi import Depends, Path

from assessment.accounts.ledger import Facts
from assessment.casework import work
from assessment.deps import CaseWork, FactsDep, WorkDep
from assessment.models import Refund
from assessment.refunds import service
from assessment.refunds.schemas import RefundDecisionCreate, RefundPaymentCreate, RefundStatusOut
from assessment.settings import AssessmentSettings
from servicekit.app import router as make_router
from servicekit.auth import Principal, PrincipalDep
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


class RefundWork(Protocol):
    """A step of working a refund (``service.start_review``, ``decide``, ``propose_payment``)."""

    async def __call__(
        self,
        session: SessionDep,
        *,
        facts: Facts,
        refund: Refund,
        principal: Principal,
        settings: AssessmentSettings,
        today: date,
    ) -> object: ...


@router.get(
    "/accounts/{tax_account}/refunds",
    responses=ERRORS,
    summary="The account's refunds and where each stands (only a paid refund left the account)",
)
async def list_refunds(facts: FactsDep, session: SessionDep) -> list[RefundStatusOut]:
    rows = sorted(facts.refunds, key=lambda r: (r.requested_on, r.id))
    return [await service.view(session, facts=facts, refund=r) for r in rows]


@router.get("/refunds/{refund_id}", responses=ERRORS, summary="One refund")
async def show_refund(found: RefundDep, session: SessionDep) -> RefundStatusOut:
    refund, facts = found
    return await service.view(session, facts=facts, refund=refund)


async def _work_refund(found: tuple[Refund, Facts], w: CaseWork, step: RefundWork) -> RefundStatusOut:
    """Agency staff, under the account's lock: the step, then the refund as it now stands."""
    refund, facts = found
    await w.staff_lock(refund.tax_account, what="work a refund")
    await step(
        w.session,
        facts=facts,
        refund=refund,
        principal=w.principal,
        settings=w.settings,
        today=w.today,
    )
    return await service.view(w.session, facts=facts, refund=refund)


@router.post("/refunds/{refund_id}/review", responses=ERRORS, summary="Review")
async def review_refund(found: RefundDep, w: WorkDep) -> RefundStatusOut:
    return await _work_refund(found, w, service.start_review)


@router.post(
    "/refunds/{refund_id}/decision",
    responses=ERRORS,
    summary="Deny, or propose the approval for another agency person",
)
async def decide_refund(body: RefundDecisionCreate, found: RefundDep, w: WorkDep) -> RefundStatusOut:
    return await _work_refund(found, w, partial(service.decide, decision=body))


@router.post(
    "/refunds/{refund_id}/payment",
    responses=ERRORS,
    summary="Propose the disbursement (method, reference, date) for another agency person's approval",
)
async def pay_refund(body: RefundPaymentCreate, found: RefundDep, w: WorkDep) -> RefundStatusOut:
    return await _work_refund(found, w, partial(service.propose_payment, payment=body))
