"""The agency's work queues across all accounts: cases not closed, refunds not finished.

The per-account lists (``/v1/cases?tax_account=``, ``/v1/accounts/{a}/refunds``) answer
"what happened on this account"; a queue answers "what waits for us", oldest first.
Agency roles only: a taxpayer asks about its own accounts.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts
from assessment.cases import service as cases_service
from assessment.cases.schemas import CaseOut
from assessment.refunds import service as refunds_service
from assessment.refunds.schemas import RefundStatusOut
from assessment.worklists import repository
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep
from servicekit.db import SessionDep
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/worklists", tags=["work queues"])
OPEN_CASE = ("filed", "under_review", "hearing_scheduled", "decision_proposed", "under_appeal")
OPEN_REFUND = ("requested", "under_review", "approved")


@router.get(
    "/cases",
    summary="Cases that wait for the agency (not decided, or under appeal), oldest first",
)
async def open_cases(
    session: SessionDep,
    principal: AgencyReadDep,
    runtime: RuntimeDep,
    status: Annotated[list[str] | None, Query(max_length=7, description="default: every open status")] = None,
) -> list[CaseOut]:
    wanted = set(status or OPEN_CASE)
    today = runtime.today()
    out: list[CaseOut] = []
    candidates = await repository.cases_by_age(
        session, on=today, last_step_not_in=cases_service.steps_never_in(wanted)
    )
    for case in candidates:
        current = await cases_service.view(session, case=case, on=today)
        if current.status not in wanted:
            continue
        out.append(await cases_service.shown(session, current=current, on=today))
        if len(out) == repository.QUEUE_LIMIT:
            break
    return out


@router.get(
    "/refunds",
    summary="Refunds requested, under review or approved and not yet paid, oldest first",
)
async def open_refunds(session: SessionDep, principal: AgencyReadDep) -> list[RefundStatusOut]:
    accounts: dict[str, Facts] = {}
    out: list[RefundStatusOut] = []
    for refund in await repository.refunds_by_age(session):
        if refund.tax_account not in accounts:
            facts = await accounts_repo.load_facts(session, refund.tax_account)
            assert facts is not None
            accounts[refund.tax_account] = facts
        shown = await refunds_service.view(session, facts=accounts[refund.tax_account], refund=refund)
        if shown.status in OPEN_REFUND:
            out.append(shown)
        if len(out) == repository.QUEUE_LIMIT:
            break
    return out
