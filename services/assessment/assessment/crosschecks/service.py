"""Cross-checking a lodging-period whenever one of its returns arrives (TADAT P6-14).

Runs inside the consumer's transaction of the declaration event (operator's return or an
intermediary's schedule row), after its liability row, so the run sees every version filed so
far; deterministic from the events (the check date is the filing date, not today). The
findings go on the operator's latest version; without an operator return there is nothing to
compare (the non-filer estimate covers that case).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.crosschecks import repository
from assessment.crosschecks.models import CrosscheckFinding, CrosscheckRun
from assessment.models import LodgingView
from taxcore.parameters import default_tree
from taxcore.rules.crosscheck import CROSSCHECK_RULES, CrossFinding, LodgingPeriodData, cross_check
from taxcore.rules.declaration import DeclarationInput

#: what a finding row keeps of taxcore's finding
FIELDS = ("rule", "line", "message", "declared", "reported", "difference", "section", "parameters")


def _fields(finding: CrossFinding | CrosscheckFinding) -> dict[str, Any]:
    return {name: getattr(finding, name) for name in FIELDS}


async def run_crosschecks(
    session: AsyncSession, *, tax_account: str, period: str, checked_on: date
) -> int | None:
    """Check the lodging-period; returns the number of findings, or None when nothing was checked."""
    lodging = await session.get(LodgingView, tax_account)
    filings = await repository.latest_filings(session, tax_account, period)
    operator = [f for f in filings if f.filer_kind == "operator"]
    if lodging is None or not operator:
        return None
    mine = max(operator, key=lambda f: (f.filed_on, f.version))
    others = sorted((f for f in filings if f.filer_kind == "facilitator"), key=lambda f: f.declaration_id)
    key = ",".join(f.declaration_id for f in others)
    if await repository.run_exists(session, mine.declaration_id, key):
        return None
    returned = DeclarationInput.model_validate(mine.input)
    # the ADR is judged once per operator version, against the peers known when it arrived: an
    # intermediary's row changes neither, so its run carries the earlier ADR finding over
    earlier = await repository.latest_run_findings(session, mine.declaration_id)
    data = LodgingPeriodData(
        jurisdiction=lodging.jurisdiction,
        period=period,
        room_count=lodging.room_count,
        operator=returned,
        intermediaries=[DeclarationInput.model_validate(f.input) for f in others],
        peer_adrs=[]
        if earlier is not None
        else await repository.peer_adrs(session, lodging, period, returned.lodging_class),
    )
    rules = CROSSCHECK_RULES if earlier is None else [r for r in CROSSCHECK_RULES if r != "adr_outlier"]
    found = cross_check(data, parameters=default_tree(), rules=rules)
    if earlier is not None:
        found += [CrossFinding.model_validate(_fields(f)) for f in earlier if f.rule == "adr_outlier"]
    run = CrosscheckRun(
        tax_account=tax_account,
        jurisdiction=lodging.jurisdiction,
        period=period,
        declaration_id=mine.declaration_id,
        intermediary_declarations=[f.declaration_id for f in others],
        intermediaries_key=key,
        checked_on=checked_on,
        findings=len(found),
    )
    session.add(run)
    await session.flush()
    session.add_all(
        CrosscheckFinding(
            run_id=run.id,
            tax_account=tax_account,
            period=period,
            declaration_id=mine.declaration_id,
            **_fields(f),
        )
        for f in found
    )
    await session.flush()
    return len(found)
