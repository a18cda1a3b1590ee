"""Reports: the per-period filing-compliance summary, and what a lodging-period's filers covered."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Path, Query
from pydantic import BaseModel, Field

from filing.declarations import repository as declarations
from filing.declarations.schemas import LodgingPeriodOut, PeriodStr
from filing.deps import VisibleLodgingDep
from filing.lodging_periods import parse_period
from filing.projection import repository as projection
from filing.reports import service
from servicekit.app import router as make_router
from servicekit.auth import AgencyReadDep, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound, ValidationFailed
from servicekit.runtime import RuntimeDep
from taxcore.jurisdictions import require_jurisdiction
from taxcore.obligations import declaration_filers, must_file_lodging
from taxcore.periods import due_date

router = make_router(prefix="/v1", tags=["dashboards"])


class ComplianceOut(BaseModel):
    """How many registered lodgings filed for a period on time, late, or not at all.

    A lodging must file for a period by ``taxcore.obligations.must_file`` (registered by
    the period's end and in a status of ``obligations.filing_statuses`` on some day of it,
    the rule assessment's non-filer job applies too). It counts as filed on the first
    day a filer whose return meets the lodging's obligation (``obligations.declaration_filers``:
    the operator) filed for the period; an intermediary's schedule alone does not.
    """

    jurisdiction: str
    period: str
    due_date: date
    as_of: date
    required: int = Field(description="registered lodgings that must file for the period")
    filed_on_time: int
    filed_late: int
    not_filed: int
    flagged: int = Field(description="filed lodgings whose latest declaration has findings")
    late_accounts: list[str]
    not_filed_accounts: list[str]


@router.get(
    "/compliance",
    responses=ValidationFailed.openapi(),
    summary="Per-period filing compliance: registered lodgings that filed on time, late, not at all",
)
async def compliance(
    session: SessionDep,
    _: AgencyReadDep,
    jurisdiction: Annotated[str, Query(examples=["PR"])],
    period: Annotated[PeriodStr, Query(examples=["2026-10"])],
    runtime: RuntimeDep,
) -> ComplianceOut:
    law = runtime.law
    require_jurisdiction(jurisdiction, parameters=law)
    p = parse_period(period, root="query")
    due = due_date(jurisdiction, p, parameters=law)
    required = [
        lodging
        for lodging in await projection.in_jurisdiction(session, jurisdiction)
        if must_file_lodging(lodging, p, parameters=law)
    ]
    filers = declaration_filers(jurisdiction, p, parameters=law)
    filed = await declarations.first_filed(
        session, jurisdiction=jurisdiction, period=str(p), filer_kinds=filers
    )
    on_time = late = flagged = 0
    late_accounts: list[str] = []
    missing: list[str] = []
    for lodging in required:
        first = filed.get(lodging.lodging_id)
        if first is None or first[0] is None:
            missing.append(lodging.tax_account)
            continue
        flagged += first[1]
        if first[0] > due:
            late += 1
            late_accounts.append(lodging.tax_account)
        else:
            on_time += 1
    return ComplianceOut(
        jurisdiction=jurisdiction,
        period=str(p),
        due_date=due,
        as_of=runtime.today(),
        required=len(required),
        filed_on_time=on_time,
        filed_late=late,
        not_filed=len(missing),
        flagged=flagged,
        late_accounts=late_accounts,
        not_filed_accounts=missing,
    )


@router.get(
    "/lodgings/{lodging_id}/periods/{period}",
    responses=NotFound.openapi(),
    summary="What each filer (operator, facilitators) covered for a lodging-period, and what was paid",
)
async def lodging_period(
    lodging: VisibleLodgingDep,
    period: Annotated[str, Path(pattern=r"^\d{4}-\d{2}$")],
    session: SessionDep,
    principal: PrincipalDep,
    runtime: RuntimeDep,
) -> LodgingPeriodOut:
    view = await service.lodging_period(
        session,
        principal=principal,
        lodging=lodging,
        period=parse_period(period, root="path"),
        law=runtime.law,
    )
    return LodgingPeriodOut.model_validate(view)
