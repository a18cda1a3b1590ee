"""Online intermediary remittance schedules: one document, many lodgings, one period.

Each valid row becomes the lodging's facilitator-filed declaration (or the next
version of it); a row that cannot be accepted is rejected on its own with its
row number and reason, and the rest is accepted. A 10,000-row document is one
transaction with a constant number of queries per chunk of rows: one for the
lodgings and the facilitator's authorizations, one for certificates, one for
earlier versions, a bulk insert of the declarations and one of their events.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json
from sqlalchemy.ext.asyncio import AsyncSession

from filing.declarations import repository as declarations
from filing.declarations.compute import CERTIFIED_EXEMPTIONS, recompute
from filing.declarations.schemas import Filer
from filing.declarations.service import (
    concurrent_versions,
    declaration_event,
    declaration_row,
    period_problem,
)
from filing.ids import random_ids
from filing.lodging_periods import filing_id
from filing.models import LodgingRow, RemittanceSchedule
from filing.projection import repository as projection
from filing.schedules import repository
from filing.schedules.schemas import ScheduleRow
from servicekit import telemetry
from servicekit.auth import Principal
from servicekit.outbox import OutboxRecord, outbox_record, service_of
from taxcore.errors import TaxcoreError
from taxcore.money import MoneyError
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date

#: taxcore's field names for the one exemption a row may carry -> the row's columns
ROW_FIELDS = {
    "exempt[0].exemption": "exemption",
    "exempt[0].amount": "exempt_amount",
    "exempt[0].evidence": "exemption_evidence",
    "exempt": "exempt_amount",
}


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"field": ".".join(str(p) for p in e["loc"]) or None, "reason": e["msg"], "code": e["type"]}
        for e in exc.errors()
    ]


def _rejected(row: int, account: str | None, errors: list[dict[str, Any]]) -> dict[str, Any]:
    """A rejected row's result, every field of ``RowResult`` in its order (the response is
    written from these dicts as they are, :func:`filing.schedules.endpoints.created`)."""
    return {
        "row": row,
        "tax_account": account,
        "status": "rejected",
        "declaration_id": None,
        "version": None,
        "tax": None,
        "total_due": None,
        "flagged": None,
        "errors": errors,
    }


def _parse(
    rows: Sequence[Any], results: dict[int, dict[str, Any]], *, start: int, stop: int
) -> list[tuple[int, ScheduleRow]]:
    """Rows ``start`` to ``stop`` (0-based, ``stop`` excluded) validated; the others rejected."""
    parsed: list[tuple[int, ScheduleRow]] = []
    for i in range(start, stop):
        raw = rows[i]
        if not isinstance(raw, dict):
            results[i] = _rejected(
                i + 1, None, [{"field": None, "reason": "a row must be an object", "code": "not_an_object"}]
            )
            continue
        try:
            parsed.append((i, ScheduleRow.model_validate(raw)))
        except ValidationError as exc:
            account = raw.get("tax_account")
            results[i] = _rejected(i + 1, account if isinstance(account, str) else None, _errors(exc))
    return parsed


def _screen(
    parsed: list[tuple[int, ScheduleRow]],
    lodgings: dict[str, tuple[LodgingRow, bool]],
    period: Period,
    received_on: date,
    results: dict[int, dict[str, Any]],
    first_row: dict[str, int],
) -> list[tuple[int, ScheduleRow, LodgingRow]]:
    """Rows whose lodging authorized the facilitator for the period and may file for it
    (``first_row``: tax account -> the first row naming it, over the chunks so far).

    An unknown lodging and one that never authorized the facilitator get the same
    reason, so a schedule cannot be used to learn which tax accounts exist."""
    candidates: list[tuple[int, ScheduleRow, LodgingRow]] = []
    for i, row in parsed:
        account = row.tax_account
        found = lodgings.get(account)
        reason: tuple[str, str, str] | None = None
        if account in first_row:
            reason = (
                "tax_account",
                f"the lodging is already on row {first_row[account]} of this schedule",
                "duplicate_lodging",
            )
        elif found is None:
            reason = (
                "tax_account",
                f"no lodging {account!r} that authorized this facilitator",
                "not_authorized",
            )
        elif not found[1]:
            reason = (
                "tax_account",
                f"the facilitator is not authorized by this lodging for {period}",
                "not_authorized_for_period",
            )
        else:
            problem = period_problem(found[0], period, received_on)
            if problem is not None:
                reason = ("period", problem, "period_not_fileable")
        first_row.setdefault(account, i + 1)
        if reason is not None:
            error = {"field": reason[0], "reason": reason[1], "code": reason[2]}
            results[i] = _rejected(i + 1, account, [error])
        else:
            assert found is not None
            candidates.append((i, row, found[0]))
    return candidates


def _compute(
    candidates: list[tuple[int, ScheduleRow, LodgingRow]],
    *,
    filer: Filer,
    period: Period,
    certificates: dict[str, set[tuple[str, str]]],
    previous: dict[str, tuple[str, int]],
    filing_ids: dict[str, str],
    received_on: date,
    today: date,
    tree: ParameterTree,
    schedule_id: str,
    submitted_by: str,
    results: dict[int, dict[str, Any]],
    service: str,
    traceparent: str | None,
) -> tuple[list[tuple[Any, ...]], list[OutboxRecord]]:
    """Each candidate computed by taxcore and turned at once into what is written: its
    declaration row (a tuple for COPY, JSON columns already encoded) and its event's outbox
    row (the envelope already encoded: ``service`` is its source, ``traceparent`` the
    request's), the same as :func:`filing.declarations.service.new_version` and the outbox
    build. Only flat values outlive the row: the collector does not walk a chunk's traces,
    models and event payloads."""
    due_by_jurisdiction: dict[str, date] = {}
    records: list[tuple[Any, ...]] = []
    events: list[OutboxRecord] = []
    ids = random_ids(2 * len(candidates))  # a row's declaration and event; a rejected row's unused
    for i, row, lodging in candidates:
        declaration_id, event_id = next(ids), next(ids)
        try:
            declared = row.declared()
            rec = recompute(
                lodging=lodging,
                period=period,
                lines=row.lines(),
                declared=declared,
                certificates=certificates.get(lodging.lodging_id, set()),
                parameters=tree,
                today=today,
            )
        except ValidationError as exc:
            results[i] = _rejected(i + 1, row.tax_account, _errors(exc))
            continue
        except (TaxcoreError, MoneyError) as exc:
            field = ROW_FIELDS.get(exc.field, exc.field)
            error = {"field": field, "reason": exc.message, "code": "not_computable"}
            results[i] = _rejected(i + 1, row.tax_account, [error])
            continue
        due = due_by_jurisdiction.get(lodging.jurisdiction)
        if due is None:
            due = due_date(lodging.jurisdiction, period, parameters=tree)
            due_by_jurisdiction[lodging.jurisdiction] = due
        fid = filing_ids[lodging.lodging_id]
        declaration = declaration_row(
            lodging=lodging,
            period=period,
            rec=rec,
            declared=declared,
            filer=filer,
            fid=fid,
            previous=previous.get(fid),
            filed_on=received_on,
            due=due,
            submitted_by=submitted_by,
            schedule_id=schedule_id,
            schedule_row=i + 1,
            declaration_id=declaration_id,
        )
        records.append(repository.declaration_record(declaration))
        event = declaration_event(declaration, event_id=event_id)
        events.append(outbox_record(service, event, traceparent=traceparent))
        payload = event.data  # the row's amounts as the event writes them: fmt() of each
        assert isinstance(payload, dict)
        results[i] = {
            "row": i + 1,
            "tax_account": row.tax_account,
            "status": "accepted",
            "declaration_id": declaration_id,
            "version": declaration["version"],
            "tax": payload["tax"],
            "total_due": payload["total_due"],
            "flagged": declaration["flagged"],
            "errors": [],
        }
    return records, events


#: rows parsed, computed and written at a time: the process holds one chunk's lodgings,
#: computations, traces and events at once, whatever the schedule's size (issue 12: a
#: 50,000-row schedule within ~200 MB), and the cost per row stays flat
CHUNK_ROWS = 2_000


@dataclass(frozen=True, slots=True)
class Accepted:
    """A schedule just written, and its per-row results as the JSON array stored with it."""

    schedule: RemittanceSchedule
    results_json: bytes


@dataclass(frozen=True, slots=True)
class _Chunk:
    """Rows ``start`` to ``stop`` parsed and screened, with what computing them needs."""

    start: int
    stop: int
    results: dict[int, dict[str, Any]]  # the chunk's results so far, by 0-based row
    candidates: list[tuple[int, ScheduleRow, LodgingRow]]
    certificates: dict[str, set[tuple[str, str]]]
    filing_ids: dict[str, str]  # lodging id -> the facilitator's filing for the period
    previous: dict[str, tuple[str, int]]


async def _looked_up(
    session: AsyncSession,
    rows: Sequence[Any],
    *,
    start: int,
    stop: int,
    filer: Filer,
    period: Period,
    received_on: date,
    first_row: dict[str, int],
) -> _Chunk:
    """A chunk's rows validated, their lodgings with the facilitator's authorizations (one
    query), screened, then their certificates and earlier versions (one query each)."""
    results: dict[int, dict[str, Any]] = {}
    parsed = _parse(rows, results, start=start, stop=stop)
    lodgings = await repository.lodgings_for_facilitator(
        session, facilitator_id=filer.id, accounts=[r.tax_account for _, r in parsed], period=period
    )
    candidates = _screen(parsed, lodgings, period, received_on, results, first_row)
    certified = [
        lodging.lodging_id for _, row, lodging in candidates if row.exemption in CERTIFIED_EXEMPTIONS
    ]
    certificates = await projection.certificates_valid_in(session, certified, period)
    filing_ids = {
        lodging.lodging_id: filing_id(lodging.lodging_id, period, filer.kind, filer.id)
        for _, _, lodging in candidates
    }
    previous = await declarations.latest_of_many(session, list(filing_ids.values()))
    return _Chunk(start, stop, results, candidates, certificates, filing_ids, previous)


async def _write(session: AsyncSession, records: list[tuple[Any, ...]], events: list[OutboxRecord]) -> None:
    with concurrent_versions():
        await repository.copy_declarations(session, records)
    await repository.copy_events(session, events)


async def accept_schedule(
    session: AsyncSession,
    *,
    principal: Principal,
    facilitator_id: str,
    period: Period,
    received_on: date,
    rows: list[Any],
    source_format: str,
    today: date,
    parameters: ParameterTree,
) -> Accepted:
    """Accept each valid row as the lodging's facilitator-filed declaration (or its next
    version); reject the others one by one. Returns the schedule with per-row results.

    The rows go through in chunks of :data:`CHUNK_ROWS`: their lodgings (with the
    facilitator's authorizations), certificates and earlier versions looked up in one query
    each (:func:`_looked_up`), computed row by row (taxcore, pure: :func:`_compute`), their
    declarations and then their events written with COPY; then the schedule's own
    row with every row's result (the declarations' reference to it is checked at commit, so
    the document is still one transaction). A chunk's results are kept as JSON, not as
    objects. ``rows`` is consumed: each chunk's rows are dropped from it once written.

    A chunk is computed in a worker thread, its events' outbox rows (envelopes encoded)
    included, while on the session, one statement after the other, PostgreSQL writes the
    chunk before it and then looks up the chunk after it (the thread and PostgreSQL use
    different cores, and the event loop serves other requests meanwhile). That is safe
    because computing is pure and a chunk's lookups do not depend on the writes before it:
    a lodging named in an earlier chunk is refused as a duplicate (the chunks are still
    screened in their order), so no filing's latest version can change between its lookup
    and its row's computation."""
    loop = asyncio.get_running_loop()
    filer = Filer(kind="facilitator", id=facilitator_id)
    schedule_id = str(uuid.uuid4())
    total = len(rows)
    first_row: dict[str, int] = {}
    written: list[bytes] = []
    accepted = 0
    unwritten: tuple[list[tuple[Any, ...]], list[OutboxRecord]] = ([], [])
    service = service_of(session)
    traceparent = telemetry.current_traceparent()  # the request's: the worker thread has none

    async def looked_up(start: int) -> _Chunk | None:
        if start >= total:
            return None
        return await _looked_up(
            session,
            rows,
            start=start,
            stop=min(start + CHUNK_ROWS, total),
            filer=filer,
            period=period,
            received_on=received_on,
            first_row=first_row,
        )

    chunk = await looked_up(0)
    while chunk is not None:
        computing = loop.run_in_executor(
            None,
            functools.partial(
                _compute,
                chunk.candidates,
                filer=filer,
                period=period,
                certificates=chunk.certificates,
                previous=chunk.previous,
                filing_ids=chunk.filing_ids,
                received_on=received_on,
                today=today,
                tree=parameters,
                schedule_id=schedule_id,
                submitted_by=principal.client_id,
                results=chunk.results,
                service=service,
                traceparent=traceparent,
            ),
        )
        try:
            # on the session, one statement at a time, while this chunk is computed: the
            # previous chunk's writes, then the next chunk's lookups
            if unwritten[0]:
                await _write(session, *unwritten)
            following = await looked_up(chunk.stop)
        finally:
            await asyncio.wait([computing])
        unwritten = computing.result()
        accepted += len(unwritten[0])
        written.append(to_json([chunk.results[i] for i in range(chunk.start, chunk.stop)])[1:-1])
        rows[chunk.start : chunk.stop] = [None] * (chunk.stop - chunk.start)
        chunk = following
    await _write(session, *unwritten)
    results_json = b"[" + b",".join(w for w in written if w) + b"]"
    schedule = await repository.insert_schedule(
        session,
        {
            "id": schedule_id,
            "facilitator_id": facilitator_id,
            "period": str(period),
            "received_on": received_on,
            "source_format": source_format,
            "rows_total": total,
            "accepted": accepted,
            "rejected": total - accepted,
            "submitted_by": principal.client_id,
        },
        results_json,
    )
    return Accepted(schedule, results_json)


def status_of(schedule: RemittanceSchedule) -> str:
    if schedule.rejected == 0:
        return "accepted"
    return "rejected" if schedule.accepted == 0 else "partially_accepted"
