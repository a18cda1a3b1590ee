"""Every declaration query."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

import asyncpg
from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    Text,
    and_,
    any_,
    bindparam,
    case,
    exists,
    false,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, distinct_on
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from filing.models import Declaration, Lodging
from servicekit.auth import Principal
from servicekit.outbox import QUEUE_CTES, OutboxEvent, queue_params
from taxcore.periods import Period

_Newer = aliased(Declaration)

#: True for the latest version of its filing.
LATEST: ColumnElement[bool] = ~exists().where(
    _Newer.filing_id == Declaration.filing_id, _Newer.version > Declaration.version
)


def visibility(principal: Principal) -> ColumnElement[bool]:
    """Agency: all; operator: every filing for its lodgings (so it sees what facilitators
    covered); facilitator: only what it filed."""
    if principal.is_agency:
        return true()
    if principal.role == "operator":
        own = select(Lodging.lodging_id).where(Lodging.operator_id == (principal.operator_id or ""))
        return Declaration.lodging_id.in_(own)
    if principal.role == "facilitator":
        return and_(
            Declaration.filer_kind == "facilitator",
            Declaration.filer_id == (principal.facilitator_id or ""),
        )
    return false()


def visible(principal: Principal) -> Select[Declaration, bool]:
    return select(Declaration, LATEST.label("latest")).where(visibility(principal))


async def get_visible(
    session: AsyncSession, principal: Principal, declaration_id: str
) -> tuple[Declaration, bool] | None:
    row = (await session.execute(visible(principal).where(Declaration.id == declaration_id))).first()
    return None if row is None else (row[0], bool(row[1]))


async def latest_of_many(session: AsyncSession, filing_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Filing id -> (declaration id, version) of its latest version, in one query."""
    if not filing_ids:
        return {}
    stmt = (
        select(Declaration.filing_id, Declaration.id, Declaration.version)
        .where(Declaration.filing_id == any_(literal(list(filing_ids), ARRAY(Text()))))
        .ext(distinct_on(Declaration.filing_id))
        .order_by(Declaration.filing_id, Declaration.version.desc())
    )
    return {r[0]: (r[1], r[2]) for r in (await session.execute(stmt)).all()}


async def history(session: AsyncSession, filing_id: str) -> Sequence[Declaration]:
    stmt = select(Declaration).where(Declaration.filing_id == filing_id).order_by(Declaration.version)
    return (await session.execute(stmt)).scalars().all()


#: from this many rows on, declarations are written with COPY instead of INSERT
COPY_THRESHOLD = 100
_JSON_COLUMNS = frozenset({"submitted", "input", "findings", "trace"})


_TABLE: Table = Declaration.__table__  # type: ignore[assignment]
#: the columns a new version is inserted with (the server fills ``seq`` and ``created_at``)
_INSERTED = [c for c in _TABLE.columns if c.name not in ("seq", "created_at")]
#: one statement, built once: the declaration row and its events (servicekit's outbox CTEs,
#: NOTIFY included), returning what the server filled in: ONE round trip per new version
_INSERT_WITH_EVENTS = text(
    QUEUE_CTES
    + f"INSERT INTO declarations ({', '.join(c.name for c in _INSERTED)}) "
    + f"VALUES ({', '.join(':' + c.name for c in _INSERTED)}) RETURNING seq, created_at"
).bindparams(*(bindparam(c.name, type_=c.type) for c in _INSERTED))


async def insert_one(
    session: AsyncSession, row: dict[str, Any], events: Sequence[OutboxEvent]
) -> Declaration:
    """Insert one declaration row and queue its events in one statement; the row comes back
    as stored: the server's ``seq`` and ``created_at`` from ``RETURNING``, every other
    column what was inserted (no second round trip, no ORM identity map)."""
    params = {**queue_params(session, events), **{c.name: row[c.name] for c in _INSERTED}}
    seq, created_at = (await session.execute(_INSERT_WITH_EVENTS, params)).one()
    return Declaration(**row, seq=seq, created_at=created_at)


#: the certificates valid in a period and the latest version of a filing, in one round trip
_CERTIFICATES_AND_LATEST = text(
    "SELECT kind, certificate_number, NULL::int AS version FROM certificates "
    "WHERE lodging_id = :lodging AND valid_from <= :last AND valid_to >= :first "
    "UNION ALL (SELECT NULL, id, version FROM declarations WHERE filing_id = :filing "
    "ORDER BY version DESC LIMIT 1)"
)


async def certificates_and_latest(
    session: AsyncSession, *, lodging_id: str, period: Period, filing_id: str
) -> tuple[set[tuple[str, str]], tuple[str, int] | None]:
    """The lodging's certificates ``{(kind, number)}`` valid on a day of ``period``, and
    ``(id, version)`` of the filing's latest version (None for a first filing)."""
    rows = (
        await session.execute(
            _CERTIFICATES_AND_LATEST,
            {"lodging": lodging_id, "first": period.first_day, "last": period.last_day, "filing": filing_id},
        )
    ).all()
    certificates = {(kind, number) for kind, number, version in rows if version is None}
    latest = next(((number, version) for _, number, version in rows if version is not None), None)
    return certificates, latest


async def insert_many(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Insert declaration rows in the session's transaction; a large batch (a remittance
    schedule) goes through PostgreSQL's COPY on the same connection."""
    if not rows:
        return
    if len(rows) < COPY_THRESHOLD:
        await session.execute(insert(Declaration), list(rows))
        return
    columns = list(rows[0])
    json_at = [i for i, c in enumerate(columns) if c in _JSON_COLUMNS]
    records = []
    for row in rows:
        record = [row[c] for c in columns]
        for i in json_at:
            record[i] = json.dumps(record[i], separators=(",", ":"))
        records.append(record)
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver: asyncpg.Connection = raw.driver_connection
    await driver.copy_records_to_table("declarations", columns=columns, records=records)


async def list_page(
    session: AsyncSession,
    principal: Principal,
    *,
    limit: int,
    before: int | None,
    jurisdiction: str | None = None,
    period: str | None = None,
    lodging: str | None = None,
    filer_kind: str | None = None,
    filer_id: str | None = None,
    status: str | None = None,
    schedule_id: str | None = None,
    latest_only: bool = False,
) -> Sequence[tuple[Declaration, bool]]:
    """Newest first, keyed by ``seq``."""
    stmt = visible(principal)
    if jurisdiction:
        stmt = stmt.where(Declaration.jurisdiction == jurisdiction)
    if period:
        stmt = stmt.where(Declaration.period == period)
    if lodging:
        stmt = stmt.where(or_(Declaration.tax_account == lodging, Declaration.lodging_id == lodging))
    if filer_kind:
        stmt = stmt.where(Declaration.filer_kind == filer_kind)
    if filer_id:
        stmt = stmt.where(Declaration.filer_id == filer_id)
    if status == "on_time":
        stmt = stmt.where(Declaration.late.is_(False))
    elif status == "late":
        stmt = stmt.where(Declaration.late.is_(True))
    elif status == "flagged":
        stmt = stmt.where(Declaration.flagged.is_(True))
    if schedule_id:
        stmt = stmt.where(Declaration.schedule_id == schedule_id)
    if latest_only:
        stmt = stmt.where(LATEST)
    if before is not None:
        stmt = stmt.where(Declaration.seq < before)
    stmt = stmt.order_by(Declaration.seq.desc()).limit(limit + 1)
    return [(r[0], bool(r[1])) for r in (await session.execute(stmt)).all()]


async def latest_for_lodging_period(
    session: AsyncSession, principal: Principal, *, lodging_id: str, period: str
) -> Sequence[Declaration]:
    stmt = (
        select(Declaration)
        .where(
            visibility(principal), Declaration.lodging_id == lodging_id, Declaration.period == period, LATEST
        )
        .order_by(Declaration.filer_kind.desc(), Declaration.filer_id)
    )
    return (await session.execute(stmt)).scalars().all()


async def first_filed(
    session: AsyncSession, *, jurisdiction: str, period: str, filer_kinds: Collection[str]
) -> dict[str, tuple[Any, bool]]:
    """Lodging id -> (first day a filer of ``filer_kinds`` filed for the period, or None;
    any filer's latest version flagged)."""
    stmt = (
        select(
            Declaration.lodging_id,
            func.min(case((Declaration.filer_kind.in_(sorted(filer_kinds)), Declaration.filed_on))),
            func.bool_or(and_(Declaration.flagged, LATEST)),
        )
        .where(Declaration.jurisdiction == jurisdiction, Declaration.period == period)
        .group_by(Declaration.lodging_id)
    )
    return {r[0]: (r[1], bool(r[2])) for r in (await session.execute(stmt)).all()}
