"""Monthly distribution runs (PR §31; 33 V.I.C. §54(e), (b)(3)(D)).

A run of month M for a jurisdiction takes every collection that was recorded
before the run, was collected on or before the last day of M, and no earlier
run took: the month's own collections plus late arrivals for months already
closed (a closed run is never rewritten). Principal components go through
taxcore's ``distribute_month`` (whichever jurisdiction: taxcore dispatches to its
rule) with the state of the jurisdiction's previous run and, where taxcore says the
jurisdiction takes one, the Bank's certification of the fiscal year (taxcore rolls a
state of an earlier fiscal year over); accessory receipts go to ``other:<J>``; the rest to suspense
(see :mod:`distribution.ledger.accounts`). The run is posted as one journal
entry: debit collections pending distribution, credit each destination.

Collections are deltas and may be negative. A bucket (room tax, impact fee,
other receipts, suspense) whose selected collections net below zero is not
taken by the run: it stays pending and is netted by a later run (taxcore
distributes only amounts >= 0, and a closed run is never clawed back).

Months run in order: the first run of a jurisdiction may be any month, each
later run must be the month after the latest one (a gap is refused). Where the agency
declared an opening state (go-live, :mod:`distribution.openings`), the first run starts
from it (taxcore ``opening_state``) and must be the month after its ``through_month``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from distribution.certifications import repository as certifications
from distribution.ledger import accounts
from distribution.ledger.repository import Line, add_entry
from distribution.models import Certification, Collection, OpeningState, Run, RunCollection
from distribution.openings import repository as openings
from distribution.openings import service as opening_service
from distribution.runs import repository
from servicekit.db import new_id
from servicekit.errors import Conflict
from servicekit.outbox import emit
from taxcore.events import distribution as ev
from taxcore.money import ZERO
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, fiscal_year
from taxcore.rules.distribution import (
    BankCertification,
    DistributionResult,
    distribute_month,
    takes_certification,
)

BUCKETS = ("room_tax", "impact_fee", "other", "suspense")
STATUTORY_BUCKET = {"tax": "room_tax", "impact_fee": "impact_fee"}


@dataclass(slots=True)
class RunOutcome:
    run: Run
    status: str  # "posted" (new), "existing" or "preview"
    collections: int


def bucket_of(collection: Collection, *, law: ParameterTree) -> str:
    where = accounts.destination(
        collection.jurisdiction, collection.component, collection.collected_on, law=law
    )
    if where == "statutory":
        return STATUTORY_BUCKET.get(collection.component, "suspense")
    return str(where)


def _select(
    collections: list[Collection], law: ParameterTree
) -> tuple[list[Collection], dict[str, Decimal], list[dict[str, Any]]]:
    by_bucket: dict[str, list[Collection]] = {b: [] for b in BUCKETS}
    for c in collections:
        by_bucket[bucket_of(c, law=law)].append(c)
    taken: list[Collection] = []
    sums: dict[str, Decimal] = {}
    carried: list[dict[str, Any]] = []
    for bucket, items in by_bucket.items():
        net = sum((c.amount for c in items), ZERO)
        if net < 0:
            carried.append(
                {
                    "bucket": bucket,
                    "amount": str(net),
                    "collections": len(items),
                    "reason": "reversals exceed collections: kept pending, netted by a later run",
                }
            )
            sums[bucket] = ZERO
            continue
        sums[bucket] = net
        taken.extend(items)
    return taken, sums, carried


def _certification_input(cert: Certification | None) -> BankCertification | None:
    if cert is None:
        return None
    return BankCertification(
        fiscal_year=cert.fiscal_year,
        amount=cert.amount,
        certified_on=cert.certified_on,
        document_reference=cert.document_reference,
        first_year_months_remaining=cert.first_year_months_remaining,
    )


def _allocation(account: str, name: str, amount: Decimal, rule: str, section: str) -> dict[str, Any]:
    fund = account.split(":", 1)[1] if account.startswith("fund:") else account
    return {
        "account": account,
        "fund": fund,
        "name": name,
        "amount": str(amount),
        "rule": rule,
        "section": section,
    }


def _compute(
    jurisdiction: str,
    period: Period,
    sums: dict[str, Decimal],
    previous: Run | None,
    cert: Certification | None,
    opening: OpeningState | None,
    law: ParameterTree,
) -> DistributionResult:
    """The month's distribution from the previous run's state, or for a first run from the
    declared opening state (its reading is prepended to the trace), or from nothing."""
    state: Any = previous.state if previous is not None else None
    opening_trace: list[dict[str, Any]] = []
    if previous is None and opening is not None:
        applied = opening_service.applied(opening, law)
        state, opening_trace = applied.state, applied.trace
    result = distribute_month(
        jurisdiction,
        month=str(period),
        amounts={component: sums[bucket] for component, bucket in STATUTORY_BUCKET.items()},
        certification=_certification_input(cert),
        state=state,
        parameters=law,
    )
    if opening_trace:
        result.trace = [*opening_trace, *result.trace]
    return result


async def _check_order(
    session: AsyncSession, jurisdiction: str, period: Period, latest: Run | None, opening: OpeningState | None
) -> None:
    if latest is None:
        if opening is not None and period != Period.parse(opening.through_month).next():
            first = Period.parse(opening.through_month).next()
            raise Conflict(
                f"the {jurisdiction} opening state covers the fiscal year through {opening.through_month} "
                f"({opening.document_reference}): the first run is {first}",
                errors=[{"pointer": "#/body/month", "detail": f"the first month to run is {first}"}],
            )
        return
    last = Period.parse(latest.month)
    if period < last:
        raise Conflict(
            f"{period} is before the latest {jurisdiction} run ({last}): closed months are never "
            "rewritten; late collections go to the next run",
            errors=[{"pointer": "#/body/month", "detail": f"the next month to run is {last.next()}"}],
        )
    if period != last.next():
        raise Conflict(
            f"months run in order: run {last.next()} before {period} "
            f"(the latest {jurisdiction} run is {last})",
            errors=[{"pointer": "#/body/month", "detail": f"the next month to run is {last.next()}"}],
        )


async def run_month(
    session: AsyncSession, *, jurisdiction: str, month: str, preview: bool, law: ParameterTree, now: datetime
) -> RunOutcome:
    period = Period.parse(month)
    # refuses unknown jurisdictions
    fund_specs = accounts.fund_accounts(jurisdiction, period.first_day, law=law)
    await repository.lock_jurisdiction(session, jurisdiction)
    existing = await repository.by_month(session, jurisdiction, str(period))
    if existing is not None:
        return RunOutcome(existing, "existing", await repository.collection_count(session, existing.id))
    latest = await repository.latest(session, jurisdiction)
    opening = await openings.current(session, jurisdiction) if latest is None else None
    await _check_order(session, jurisdiction, period, latest, opening)

    candidates = list(await repository.undistributed(session, jurisdiction, period.last_day))
    taken, sums, carried = _select(candidates, law)
    fy = fiscal_year(jurisdiction, period.first_day, parameters=law)
    cert = (
        await certifications.current(session, jurisdiction, fy)
        if takes_certification(jurisdiction, period.first_day, law)
        else None
    )
    result = _compute(jurisdiction, period, sums, latest, cert, opening, law)

    names = {s.code: s.name for s in fund_specs}
    allocations = [
        _allocation(
            accounts.fund_account_code(a.fund),
            names.get(accounts.fund_account_code(a.fund), a.fund),
            a.amount,
            a.rule,
            a.section,
        )
        for a in result.allocations
    ]
    other, suspense = accounts.other(jurisdiction, period.first_day, law=law), accounts.suspense(jurisdiction)
    if sums["other"]:
        allocations.append(
            _allocation(other.code, other.name, sums["other"], "accessory_receipts", other.section or "")
        )
    if sums["suspense"]:
        allocations.append(
            _allocation(suspense.code, suspense.name, sums["suspense"], "no_statutory_destination", "—")
        )
    late = [c for c in taken if c.collected_on < period.first_day]
    by_component: dict[str, Decimal] = {}
    for c in taken:
        by_component[c.component] = by_component.get(c.component, ZERO) + c.amount
    inputs: dict[str, Any] = {
        "collections": len(taken),
        "by_bucket": {k: str(v) for k, v in sums.items()},
        "by_component": {k: str(v) for k, v in sorted(by_component.items())},
        "late": {"collections": len(late), "amount": str(sum((c.amount for c in late), ZERO))},
        "carried": carried,
        "opening_state": None
        if opening is None
        else {
            "id": opening.id,
            "version": opening.version,
            "through_month": opening.through_month,
            "document_reference": opening.document_reference,
            "entered_by": opening.entered_by,
        },
        "certification": None
        if cert is None
        else {
            "id": cert.id,
            "version": cert.version,
            "amount": str(cert.amount),
            "document_reference": cert.document_reference,
        },
    }
    extra = sums["other"] + sums["suspense"]
    run = Run(
        id=new_id(),
        jurisdiction=jurisdiction,
        month=str(period),
        fiscal_year=result.state.fiscal_year,
        closed_through=period.last_day,
        collected=result.collected + extra,
        collected_in_month=result.collected_in_month + extra,
        released=result.released,
        pending=result.pending,
        certification_id=cert.id if cert else None,
        inputs=inputs,
        allocations=allocations,
        state=result.state.model_dump(mode="json"),
        trace=result.trace,
        posted_at=now,
    )
    if preview:
        return RunOutcome(run, "preview", len(taken))
    await _post(session, run, taken, law)
    return RunOutcome(run, "posted", len(taken))


async def _post(session: AsyncSession, run: Run, taken: list[Collection], law: ParameterTree) -> None:
    session.add(run)
    await session.flush()
    session.add_all(RunCollection(collection_id=c.id, run_id=run.id) for c in taken)
    await session.flush()
    period = Period.parse(run.month)
    j = run.jurisdiction
    specs = {s.code: s for s in accounts.fund_accounts(j, period.first_day, law=law)}
    other = accounts.other(j, period.first_day, law=law)
    specs[other.code] = other
    specs[accounts.suspense(j).code] = accounts.suspense(j)
    credits = [
        Line(specs[a["account"]], -Decimal(a["amount"]), a["rule"], a["section"])
        for a in run.allocations
        if Decimal(a["amount"]) != 0
    ]
    total = -sum((line.amount for line in credits), ZERO)
    entry_id: int | None = None
    if total:
        entry_id = await add_entry(
            session,
            jurisdiction=j,
            kind="run",
            effective_on=period.last_day,
            description=f"distribution run {run.id}: {j} {run.month}",
            run_id=run.id,
            lines=[Line(accounts.pending(j), total, "distribution.run", None), *credits],
        )
    await emit(
        session,
        ev.RunPosted(
            run_id=run.id,
            jurisdiction=j,
            month=run.month,
            fiscal_year=run.fiscal_year,
            collected=run.collected,
            collected_in_month=run.collected_in_month,
            released=run.released,
            pending=run.pending,
            allocations=[
                ev.RunAllocation(
                    fund=a["fund"], amount=Decimal(a["amount"]), rule=a["rule"], section=a["section"]
                )
                for a in run.allocations
            ],
            collections=len(taken),
            journal_entry_id=entry_id,
            posted_at=run.posted_at,
            closed_through=run.closed_through,
        ),
        key=j,
        subject=run.id,
    )
