"""Queries over remittance schedules."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import from_json, to_json
from sqlalchemy import Table, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from filing.declarations.repository import DriverStatement, driver, loaded
from filing.models import Declaration, Lodging, LodgingRow, RemittanceSchedule
from servicekit.outbox import OutboxRecord, copy_records
from taxcore.periods import Period


async def list_page(
    session: AsyncSession,
    *,
    facilitator_id: str | None,
    period: str | None,
    before: int | None,
    limit: int,
) -> Sequence[RemittanceSchedule]:
    """Newest first, ``limit + 1`` rows (the extra one says there is a next page).

    The per-row results (a JSONB document as long as the schedule) are not loaded."""
    q = select(RemittanceSchedule).order_by(RemittanceSchedule.seq.desc()).limit(limit + 1)
    q = q.options(defer(RemittanceSchedule.results))
    if facilitator_id is not None:
        q = q.where(RemittanceSchedule.facilitator_id == facilitator_id)
    if period is not None:
        q = q.where(RemittanceSchedule.period == period)
    if before is not None:
        q = q.where(RemittanceSchedule.seq < before)
    return (await session.scalars(q)).all()


_LODGING_COLUMNS = [c.name for c in Lodging.__table__.columns]
#: the lodging's JSONB columns (its status and attribute histories), sent as their text and
#: decoded here by pydantic-core (~0.3 us) rather than by the driver's codec (``json.loads``
#: behind a Python callback, ~1.2 us): two per row of a schedule
_JSON_LODGING_COLUMNS = frozenset(c.name for c in Lodging.__table__.columns if isinstance(c.type, JSONB))
_SELECTED_LODGING = ", ".join(
    f"CAST(l.{c} AS text)" if c in _JSON_LODGING_COLUMNS else f"l.{c}" for c in _LODGING_COLUMNS
)
_JSON_LODGING_AT = tuple(i for i, c in enumerate(_LODGING_COLUMNS) if c in _JSON_LODGING_COLUMNS)
#: the named lodgings that ever authorized the facilitator, each with whether an authorization
#: is in force on a day of the period: ONE statement for a chunk of a schedule, run on the
#: driver connection (no ORM identity map or result proxy per row).
#:
#: Written so that its plan does not depend on table statistics (a fresh projection has none,
#: and autovacuum may be off): each named account is one probe of the lodgings' unique
#: ``tax_account`` index, then ONE aggregate over that lodging's authorizations by the
#: facilitator (``ix_authorizations_lodging_id_facilitator_id``), LATERAL so it runs per
#: lodging. The two ``EXISTS`` it replaces were planned, without statistics, as a hash or
#: bitmap over every authorization of the facilitator: 142-448 ms per 2,000-row chunk at
#: 50,000 authorizations, 19-35 ms this way.
_LODGINGS_FOR_FACILITATOR = DriverStatement(
    f"SELECT {_SELECTED_LODGING}, a.authorized "
    "FROM unnest(CAST(:accounts AS text[])) AS n(account) "
    "JOIN lodgings l ON l.tax_account = n.account "
    "CROSS JOIN LATERAL (SELECT count(*) AS ever, "
    "coalesce(bool_or(v.starts_on <= :last AND (v.ends_on IS NULL OR v.ends_on >= :first)), false) "
    "AS authorized FROM authorizations v "
    "WHERE v.lodging_id = l.lodging_id AND v.facilitator_id = :facilitator) a "
    "WHERE a.ever > 0"
)


async def lodgings_for_facilitator(
    session: AsyncSession, *, facilitator_id: str, accounts: Sequence[str], period: Period
) -> dict[str, tuple[LodgingRow, bool]]:
    """Tax account -> (lodging, authorized on ``period``) for the lodgings that ever authorized
    the facilitator: :func:`filing.projection.repository.lodgings_for_facilitator`'s answer,
    each lodging a :class:`~filing.models.LodgingRow` (only read)."""
    if not accounts:
        return {}
    params = {
        "facilitator": facilitator_id,
        "accounts": list(dict.fromkeys(accounts)),  # each once: one probe, one row
        "first": period.first_day,
        "last": period.last_day,
    }
    conn = await driver(session)
    n = len(_LODGING_COLUMNS)
    found: dict[str, tuple[LodgingRow, bool]] = {}
    for record in await conn.fetch(_LODGINGS_FOR_FACILITATOR.sql, *_LODGINGS_FOR_FACILITATOR.args(params)):
        values = list(record)
        for i in _JSON_LODGING_AT:
            if values[i] is not None:
                values[i] = from_json(values[i])
        lodging = LodgingRow._make(values[:n])
        found[lodging.tax_account] = (lodging, bool(values[n]))
    return found


_DECLARATION_TABLE: Table = Declaration.__table__  # type: ignore[assignment]
#: the columns a schedule's declarations are copied with (the server fills ``seq``, ``created_at``)
DECLARATION_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in _DECLARATION_TABLE.columns if c.name not in ("seq", "created_at")
)
_JSON_COLUMNS = frozenset({"submitted", "input", "findings"})
_COLUMN_VALUES = operator.itemgetter(*DECLARATION_COLUMNS)
_JSON_AT = tuple(i for i, name in enumerate(DECLARATION_COLUMNS) if name in _JSON_COLUMNS)
_TRACE_AT = DECLARATION_COLUMNS.index("trace")


def declaration_record(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A declaration row (:func:`filing.declarations.service.new_version`'s columns, its
    ``trace`` a taxcore ``Trace``) as the COPY record of :func:`copy_declarations`: its JSON
    columns encoded now, so that only flat values wait for the chunk's COPY.

    The trace is encoded from its steps by pydantic-core (``fallback=str`` for what
    ``Trace.to_list`` renders with ``str``): the same JSON as ``Trace.to_list()``'s, without
    rendering its values first. Each step goes to the encoder as a plain dict with
    ``Step.to_dict``'s keys in its order, the values as they are (pydantic-core walks a dict
    at ~half the cost of a slotted dataclass: 17 vs 28 us per trace here)."""
    record = list(_COLUMN_VALUES(row))
    for i in _JSON_AT:
        record[i] = to_json(record[i]).decode()
    steps = [
        {
            "rule": s.rule,
            "citation": s.citation,
            "description": s.description,
            "inputs": s.inputs,
            "parameters": s.parameters,
            "result": s.result,
        }
        for s in record[_TRACE_AT].steps
    ]
    record[_TRACE_AT] = to_json(steps, fallback=str).decode()
    return tuple(record)


async def copy_declarations(session: AsyncSession, records: Sequence[tuple[Any, ...]]) -> None:
    """Write a chunk's declarations (:func:`declaration_record`) with COPY, in the session's
    transaction."""
    if records:
        conn = await driver(session)
        await conn.copy_records_to_table("declarations", columns=list(DECLARATION_COLUMNS), records=records)


async def copy_events(session: AsyncSession, events: Sequence[OutboxRecord]) -> None:
    """Write a chunk's events (``servicekit.outbox.outbox_record``) with COPY, in the
    session's transaction, after its declarations (:func:`servicekit.outbox.copy_records`)."""
    if events:
        await copy_records(await driver(session), events)


_SCHEDULE_COLUMNS = (
    "id",
    "facilitator_id",
    "period",
    "received_on",
    "source_format",
    "rows_total",
    "accepted",
    "rejected",
    "submitted_by",
)
_INSERT_SCHEDULE = DriverStatement(
    f"INSERT INTO remittance_schedules ({', '.join(_SCHEDULE_COLUMNS)}, results) "
    f"VALUES ({', '.join(':' + c for c in _SCHEDULE_COLUMNS)}, CAST(CAST(:results AS text) AS jsonb)) "
    "RETURNING seq, created_at"
)


async def insert_schedule(
    session: AsyncSession, values: Mapping[str, Any], results_json: bytes
) -> RemittanceSchedule:
    """Insert the schedule's row, its per-row results sent as the JSON text they already are;
    returned as stored (``results`` left unloaded: the caller has them as JSON)."""
    conn = await driver(session)
    params = {**values, "results": results_json.decode()}
    stored = await conn.fetchrow(_INSERT_SCHEDULE.sql, *_INSERT_SCHEDULE.args(params))
    assert stored is not None
    return loaded(RemittanceSchedule, {**values, "seq": stored[0], "created_at": stored[1]})
