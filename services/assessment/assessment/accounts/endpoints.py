from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Query, Response

from assessment.accounts import repository, service
from assessment.accounts.ledger import account_state
from assessment.accounts.schemas import CreditsOut, RefundCreate, RefundOut, Statement
from assessment.deps import FactsDep, ReadFactsDep
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, NotFound, ValidationFailed
from servicekit.runtime import RuntimeDep
from taxcore.money import fmt

router = make_router(prefix="/v1/accounts", tags=["accounts"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi()}
AsOf = Annotated[date | None, Query(description="statement date (YYYY-MM-DD), past or future; default today")]


@router.get(
    "/{tax_account}/statement",
    response_model=Statement,
    response_model_exclude_none=False,
    responses=ERRORS,
    summary="Every period's principal, penalties, interest, fines, payments and balance as of a date",
    operation_id="accounts.statement.get",
    description=(
        "The statement of a tax account on any date, past or future (`?as_of=`): per period the "
        "principal declared or assessed, penalties, interest and fines accrued to that date "
        "(each with its statute section), payments applied and the balance. An operator sees "
        "its own accounts only; another's is a 404."
    ),
)
async def get_statement(
    read: ReadFactsDep,
    runtime: RuntimeDep,
    as_of: AsOf = None,
    explain: Annotated[bool, Query(description="include taxcore's trace and citations")] = False,
) -> Statement | Response:
    facts = await read.load(traces=explain)
    on = as_of or runtime.today()
    if explain:
        return Statement.model_validate(service.statement(facts, as_of=on, explain=True))
    # the schema's JSON, written once from the service's wire values (service.statement_json)
    return Response(service.statement_json(facts, as_of=on), media_type="application/json")


@router.get(
    "/{tax_account}/credits",
    response_model=CreditsOut,
    responses=ERRORS,
    summary="Unapplied credit, by payment, with its PR §42 refund limit",
)
async def get_credits(facts: FactsDep, runtime: RuntimeDep, as_of: AsOf = None) -> CreditsOut:
    state = account_state(facts, as_of or runtime.today())
    return CreditsOut.model_validate(service.credits_out(state))


@router.post(
    "/{tax_account}/refunds",
    status_code=201,
    response_model=RefundOut,
    responses={**ERRORS, **Forbidden.openapi()},
    summary="Request the refund of credit within PR §42 (4 years from the declaration, 3 from payment)",
)
async def request_refund(
    body: RefundCreate, facts: FactsDep, session: SessionDep, principal: PrincipalDep, runtime: RuntimeDep
) -> RefundOut:
    if not (principal.can_write_all or principal.role == "operator"):
        raise Forbidden("only the taxpayer (operator) or the agency administrator requests a refund")
    await repository.lock_account(session, facts.tax_account)
    refund, state = await service.request_refund(
        session,
        facts=facts,
        amount=body.amount,
        requested_on=body.requested_on or runtime.today(),
        requested_by=principal.client_id,
        today=runtime.today(),
    )
    await service.refresh_summary(session, facts=facts, as_of=runtime.today())
    return RefundOut(
        refund_id=refund.id,
        tax_account=refund.tax_account,
        amount=fmt(refund.amount),
        requested_on=refund.requested_on,
        status="requested",
        credit=CreditsOut.model_validate(service.credits_out(state)),
    )
