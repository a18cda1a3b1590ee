"""Cross-check findings: the agency sees all; an operator those on its own declarations (404 else)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from assessment.accounts import repository as accounts
from assessment.crosschecks import repository
from assessment.crosschecks.schemas import CrosscheckFindingOut
from assessment.models import LodgingView
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep, Principal, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, NotFound
from taxcore.rules.crosscheck import CROSSCHECK_RULES

router = make_router(prefix="/v1", tags=["cross-checks"])
PERIOD = r"^\d{4}-(0[1-9]|1[0-2])$"
RULES = "^(" + "|".join(CROSSCHECK_RULES) + ")$"


async def _visible(session: SessionDep, principal: Principal, tax_account: str) -> None:
    lodging = await session.get(LodgingView, tax_account)
    if lodging is None or not accounts.visible(principal, lodging):
        raise NotFound(f"no account {tax_account!r}")


@router.get(
    "/crosschecks",
    responses={**Forbidden.openapi()},
    summary="Current cross-check findings of every lodging-period (agency only; TADAT P6-14)",
)
async def list_findings(
    session: SessionDep,
    _: AgencyReadDep,
    jurisdiction: Annotated[str | None, Query(examples=["VI"])] = None,
    period: Annotated[str | None, Query(pattern=PERIOD)] = None,
    rule: Annotated[str | None, Query(pattern=RULES)] = None,
) -> list[CrosscheckFindingOut]:
    rows = await repository.current_findings(session, jurisdiction=jurisdiction, period=period, rule=rule)
    return [CrosscheckFindingOut.of(f) for f in rows]


@router.get(
    "/accounts/{tax_account}/crosschecks",
    responses={**NotFound.openapi()},
    summary="An account's current cross-check findings (its operator or the agency)",
)
async def account_findings(
    session: SessionDep,
    principal: PrincipalDep,
    tax_account: Annotated[str, Path()],
    period: Annotated[str | None, Query(pattern=PERIOD)] = None,
) -> list[CrosscheckFindingOut]:
    await _visible(session, principal, tax_account)
    rows = await repository.current_findings(session, tax_account=tax_account, period=period)
    return [CrosscheckFindingOut.of(f) for f in rows]


@router.get(
    "/declarations/{declaration_id}/crosschecks",
    responses={**NotFound.openapi()},
    summary="The cross-check findings on one declaration version (its operator or the agency)",
)
async def declaration_findings(
    session: SessionDep, principal: PrincipalDep, declaration_id: Annotated[str, Path()]
) -> list[CrosscheckFindingOut]:
    account = await repository.account_of_declaration(session, declaration_id)
    if account is None:
        raise NotFound(f"no declaration {declaration_id!r}")
    try:
        await _visible(session, principal, account)
    except NotFound:
        raise NotFound(f"no declaration {declaration_id!r}") from None
    return [CrosscheckFindingOut.of(f) for f in await repository.findings_on(session, declaration_id)]
