"""The account's timeline: every fact and case-work step, oldest first, as the caller may see it."""

from __future__ import annotations

from assessment.casework.schemas import Timeline, TimelineEntry
from assessment.deps import FactsDep
from assessment.timeline.service import entries
from servicekit.app import router as make_router
from servicekit.db import SessionDep
from servicekit.errors import NotFound

router = make_router(prefix="/v1/accounts", tags=["accounts"])


@router.get(
    "/{tax_account}/timeline",
    responses=NotFound.openapi(),
    summary="Everything that happened to the account, oldest first: payments, notices, case steps, "
    "proposals and approvals, abatements, adjustments",
)
async def get_timeline(facts: FactsDep, session: SessionDep) -> Timeline:
    items = [TimelineEntry.model_validate(e) for e in await entries(session, facts=facts)]
    return Timeline(tax_account=facts.tax_account, entries=items)
