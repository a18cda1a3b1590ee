"""Cross-checking a lodging-period whenever one of its returns arrives (TADAT P6-14).

Runs inside the consumer's transaction of the declaration event (operator's return or an
intermediary's schedule row), after its liability row, so the run sees every version filed so
far; deterministic from the events (the check date is the filing date, not today). The
findings go on the operator's latest version; without an operator return there is nothing to
compare (the non-filer estimate covers that case).
"""

from __future__ import annotations

from collections.abc import Sequence
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


def _fields(finding: CrossFinding | CrosscheckFinding) -> dict[str, Any]:
    return repository.finding_fields(finding)


async def prepare_batch(
    session: AsyncSession,
    *,
    periods: Sequence[tuple[str, str]],
    returns: Sequence[tuple[str, str]] | None = None,
) -> None:
    """A consumer batch's set-up: what the cross-checks of its lodging-periods ((account,
    period)) read, fetched for all at once (:func:`repository.prepare`); its lodgings are in
    the session already (the accounts' set-up loaded them). ``returns``: the lodging-periods of
    the batch's operator returns, whose groups' peers are fetched now (None: every group's);
    another group's are fetched if a check asks for them."""
    pairs = sorted(set(periods))
    lodgings = {a: v for a in {a for a, _ in pairs} if (v := await session.get(LodgingView, a)) is not None}
    await repository.prepare(session, pairs, lodgings, peers_of=returns)


async def run_crosschecks(
    session: AsyncSession,
    *,
    tax_account: str,
    period: str,
    checked_on: date,
    law: ParameterTree,
    state: repository.CheckState | None = None,
) -> int | None:
    """Check the lodging-period; returns the number of findings, or None when nothing was checked.

    What it reads comes from ``state``, else the consumer batch's (:func:`prepare_batch`), else
    it is fetched now for this lodging-period; the run is held and written with the batch's
    others (:func:`repository.hold_run`): no statement of its own in a prepared batch.
    """
    lodging = await session.get(LodgingView, tax_account)
    if lodging is None:
        return None
    pair = (tax_account, period)
    if state is None or pair not in state.filings:
        state = repository.prepared(session)
    if state is None or pair not in state.filings:
        state = await repository.load(session, [pair], {tax_account: lodging})
    filings = state.latest_filings(session, pair)
    operator = [f for f in filings if f.filer_kind == "operator"]
    if not operator:
        return None
    mine = max(operator, key=lambda f: (f.filed_on, f.version))
    others = sorted((f for f in filings if f.filer_kind == "facilitator"), key=lambda f: f.declaration_id)
    key = ",".join(f.declaration_id for f in others)
    if (mine.declaration_id, key) in state.runs:
        return None
    returned = DeclarationInput.model_validate(mine.input)
    # the ADR is judged once per operator version, against the peers known when it arrived: an
    # intermediary's row changes neither, so its run carries the earlier ADR finding over
    earlier = state.earlier.get(mine.declaration_id)
    data = LodgingPeriodData(
        jurisdiction=lodging.jurisdiction,
        period=period,
        room_count=lodging.room_count,
        operator=returned,
        intermediaries=[DeclarationInput.model_validate(f.input) for f in others],
        peer_adrs=[]
        if earlier is not None
        else await state.peer_adrs(session, lodging, period, returned.lodging_class),
    )
    rules = CROSSCHECK_RULES if earlier is None else [r for r in CROSSCHECK_RULES if r != "adr_outlier"]
    found = cross_check(data, parameters=law, rules=rules)
    if earlier is not None:
        found += [CrossFinding.model_validate(_fields(f)) for f in earlier if f.rule == "adr_outlier"]
    previous = state.last_findings.get(pair)
    intermediaries = [f.declaration_id for f in others]
    run_id = await repository.hold_run(
        session,
        state,
        {
            "tax_account": tax_account,
            "jurisdiction": lodging.jurisdiction,
            "period": period,
            "declaration_id": mine.declaration_id,
            "intermediary_declarations": intermediaries,
            "intermediaries_key": key,
            "checked_on": checked_on,
        },
        found,
    )
    if found or previous:
        event = CrosscheckFindingsRecorded(
            run_id=run_id,
            tax_account=tax_account,
            jurisdiction=lodging.jurisdiction,
            period=period,
            declaration_id=mine.declaration_id,
            intermediary_declarations=intermediaries,
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
    What the checks read is fetched for all of them at once.
    """
    unchecked = await repository.unchecked_periods(session, tax_account)
    lodging = await session.get(LodgingView, tax_account)
    if not unchecked or lodging is None:
        return
    state = await repository.load(session, [(tax_account, p) for p, _ in unchecked], {tax_account: lodging})
    for period, filed_on in unchecked:
        await run_crosschecks(
            session, tax_account=tax_account, period=period, checked_on=filed_on, law=law, state=state
        )


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
