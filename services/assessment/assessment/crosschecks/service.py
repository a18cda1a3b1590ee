"""Cross-checking a lodging-period whenever one of its returns arrives (TADAT P6-14).

Runs inside the consumer's transaction of the declaration event (operator's return or an
intermediary's schedule row), after its liability row, so the run sees every version filed so
far; deterministic from the events (the check date is the filing date, not today). The
findings go on the operator's latest version; without an operator return there is nothing to
compare (the non-filer estimate covers that case).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.casework.events import event_id
from assessment.casework.schemas import Happened
from assessment.crosschecks import repository
from assessment.crosschecks.models import CrosscheckFinding, CrosscheckRun
from assessment.models import LodgingView
from servicekit.outbox import emit
from taxcore.events.compliance import CrosscheckFindingItem, CrosscheckFindingsRecorded
from taxcore.parameters import ParameterTree
from taxcore.rules.crosscheck import CROSSCHECK_RULES, CrossFinding, LodgingPeriodData, cross_check
from taxcore.rules.declaration import DeclarationInput

#: what a finding row keeps of taxcore's finding
FIELDS = ("rule", "line", "message", "declared", "reported", "difference", "section", "parameters")


def _fields(finding: CrossFinding | CrosscheckFinding) -> dict[str, Any]:
    return {name: getattr(finding, name) for name in FIELDS}


async def run_crosschecks(
    session: AsyncSession, *, tax_account: str, period: str, checked_on: date, law: ParameterTree
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
    found = cross_check(data, parameters=law, rules=rules)
    if earlier is not None:
        found += [CrossFinding.model_validate(_fields(f)) for f in earlier if f.rule == "adr_outlier"]
    previous = await repository.latest_run(session, tax_account=tax_account, period=period)
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
    if found or (previous is not None and previous.findings):
        event = CrosscheckFindingsRecorded(
            run_id=run.id,
            tax_account=tax_account,
            jurisdiction=lodging.jurisdiction,
            period=period,
            declaration_id=mine.declaration_id,
            intermediary_declarations=run.intermediary_declarations,
            checked_on=checked_on,
            findings=[CrosscheckFindingItem.model_validate(_fields(f)) for f in found],
        )
        await emit(session, event, key=tax_account, event_id=event_id("crosscheck", mine.declaration_id, key))
    return len(found)


async def check_when_the_lodging_arrives(
    session: AsyncSession, *, tax_account: str, law: ParameterTree
) -> None:
    """Check the lodging-periods whose returns arrived before the lodging did.

    Returns and the registry's snapshots come on different topics, in no order between them;
    a return that finds no lodging is not checked (:func:`run_crosschecks`). Once the
    lodging is known, each such lodging-period is checked as of its last return's filing
    date, as that return would have been; a period already checked is not checked again.
    """
    for period, filed_on in await repository.unchecked_periods(session, tax_account):
        await run_crosschecks(session, tax_account=tax_account, period=period, checked_on=filed_on, law=law)


def notable_runs(runs: list[CrosscheckRun]) -> list[tuple[CrosscheckRun, bool]]:
    """The runs an account's history shows (and that published an event): those that recorded
    findings, and those that cleared the findings of the lodging-period's run before them
    (``True``: cleared)."""
    out: list[tuple[CrosscheckRun, bool]] = []
    last: dict[str, int] = {}
    for run in runs:
        if run.findings or last.get(run.period, 0):
            out.append((run, not run.findings))
        last[run.period] = run.findings
    return out


async def timeline_entries(session: AsyncSession, *, tax_account: str) -> list[Happened]:
    """The account's cross-check findings (and the checks that cleared them) for its timeline."""
    runs = notable_runs(await repository.account_runs(session, tax_account))
    findings = await repository.findings_of_runs(session, [r.id for r, _ in runs])
    out: list[Happened] = []
    for run, cleared in runs:
        of_run = Happened.of_row(
            run,
            on=run.checked_on,
            period=run.period,
            kind="crosscheck.cleared",
            subject_id=run.id,
            summary=f"cross-check of {run.period}: no finding on declaration {run.declaration_id}",
        )
        if cleared:
            out.append(of_run)
        for f in findings[run.id]:
            out.append(
                replace(
                    of_run,
                    kind="crosscheck.finding",
                    subject_id=f.id,
                    amount=f.difference,
                    section=f.section,
                    summary=f"{f.rule}: {f.message}",
                )
            )
    return out
