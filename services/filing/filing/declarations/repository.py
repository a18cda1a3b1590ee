"""Every declaration query."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg
from pydantic_core import to_json
from sqlalchemy import (
    ColumnElement,
    Numeric,
    Select,
    Table,
    and_,
    case,
    exists,
    false,
    func,
    insert,
    or_,
    select,
    true,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from filing.models import Declaration, Lodging, LodgingRow
from servicekit.auth import Principal
from servicekit.outbox import QUEUE_ONE_CTES, OutboxEvent, queue_one_params
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
    """Filing id -> (declaration id, version) of its latest version, in one query.

    One probe of the ``(filing_id, version)`` unique index per filing id, backwards, first
    entry only (:data:`_LATEST_OF_MANY`), whatever the table's statistics say."""
    if not filing_ids:
        return {}
    conn = await driver(session)
    rows = await conn.fetch(_LATEST_OF_MANY.sql, list(dict.fromkeys(filing_ids)))
    return {r[0]: (r[1], r[2]) for r in rows}


async def history(session: AsyncSession, filing_id: str) -> Sequence[Declaration]:
    stmt = select(Declaration).where(Declaration.filing_id == filing_id).order_by(Declaration.version)
    return (await session.execute(stmt)).scalars().all()


#: from this many rows on, declarations are written with COPY instead of INSERT
COPY_THRESHOLD = 100
_JSON_COLUMNS = frozenset({"submitted", "input", "findings", "trace"})


class DriverStatement:
    """A statement written with ``:name`` parameters, run on the session's asyncpg
    connection itself as ``$1, $2, ...``: asyncpg prepares it once per connection and
    caches it; no SQLAlchemy compile, execution context or result proxy on the hot path."""

    def __init__(self, sql: str) -> None:
        names: list[str] = []

        def positional(m: re.Match[str]) -> str:
            if m[1] not in names:
                names.append(m[1])
            return f"${names.index(m[1]) + 1}"

        self.sql = re.sub(r"(?<![:\w]):(\w+)", positional, sql)
        self.names = tuple(names)

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        return [params[n] for n in self.names]


#: :func:`latest_of_many`: a LATERAL ``ORDER BY version DESC LIMIT 1`` per filing id. The
#: ``DISTINCT ON`` over ``filing_id = ANY(...)`` it replaces read every version of every
#: filing and sorted them (116-204 ms per 2,000-row chunk of a schedule; 11-18 ms this way)
_LATEST_OF_MANY = DriverStatement(
    "SELECT f.filing_id, d.id, d.version FROM unnest(CAST(:filing_ids AS text[])) AS f(filing_id) "
    "CROSS JOIN LATERAL (SELECT id, version FROM declarations WHERE filing_id = f.filing_id "
    "ORDER BY version DESC LIMIT 1) d"
)


_T = TypeVar("_T")

#: ``session.info`` key of the session's (adapter, asyncpg connection), looked up once
_DRIVER = "filing.declarations.driver"


async def driver(session: AsyncSession, *, begin: bool = True) -> asyncpg.Connection:
    """The asyncpg connection of the session, its transaction begun (``begin``) or as it is.

    SQLAlchemy's asyncpg adapter sends BEGIN lazily, before its first statement; a
    statement sent on the driver connection first would run outside the transaction,
    so the adapter's transaction is started here (the adapter then commits or rolls it
    back with the session, as if it had begun it itself).

    ``begin=False`` is for a request whose whole effect is ONE statement (PostgreSQL runs
    a statement outside a transaction block as its own transaction, all or nothing): when
    nothing was sent on the session yet, the statement runs on its own, without the
    BEGIN and COMMIT round trips; once anything was (an Idempotency-Key row, a test's
    SAVEPOINT), it joins that transaction as with ``begin=True``.

    The connection is looked up once per session (a route's session holds one connection
    for its one transaction)."""
    found = session.info.get(_DRIVER)
    if found is None or not session.in_transaction():
        connection = await session.connection()
        raw = await connection.get_raw_connection()
        found = session.info[_DRIVER] = (raw.dbapi_connection, raw.driver_connection)
    adapted: Any = found[0]
    if begin and adapted._transaction is None:  # noqa: SLF001 - see the docstring
        await adapted._start_transaction()  # noqa: SLF001
    conn: asyncpg.Connection = found[1]
    return conn


def loaded(cls: type[_T], values: Mapping[str, Any]) -> _T:
    """An instance of mapped class ``cls`` holding ``values``, built as the ORM builds a row
    it loads (no constructor, no attribute events: ~20x cheaper than ``cls(**values)``).
    It belongs to no session, as ``cls(**values)`` would not."""
    instance: Any = cls.__mapper__.class_manager.new_instance()  # type: ignore[attr-defined]
    instance.__dict__.update(values)
    return instance  # type: ignore[no-any-return]


_TABLE: Table = Declaration.__table__  # type: ignore[assignment]
#: the columns a new version is inserted with (the server fills ``seq`` and ``created_at``)
_INSERTED = [c.name for c in _TABLE.columns if c.name not in ("seq", "created_at")]
#: the amounts (and the rate): sent by :func:`insert_one` as their decimal text
_NUMERIC = frozenset(c.name for c in _TABLE.columns if isinstance(c.type, Numeric))


def _inserted_value(column: str) -> str:
    """A column's value in :data:`_INSERT_WITH_EVENT`: a JSON column's parameter is the JSON's
    UTF-8 bytes (pydantic-core's output as it is: not decoded to a ``str`` and encoded again
    by the driver), an amount's its exact decimal text (``str`` of the ``Decimal``: asyncpg's
    binary numeric encoder splits a ``Decimal`` into a digit tuple, ~10x its ``str``), each
    cast to the column's type by the server."""
    if column in _JSON_COLUMNS:
        return f"CAST(convert_from(CAST(:{column} AS bytea), 'UTF8') AS jsonb)"
    if column in _NUMERIC:
        return f"CAST(CAST(:{column} AS text) AS numeric)"
    return f":{column}"


#: one statement: the declaration row and its event (servicekit's outbox CTEs, NOTIFY
#: included), returning what the server filled in: ONE round trip per new version
_INSERT_WITH_EVENT = DriverStatement(
    QUEUE_ONE_CTES
    + f"INSERT INTO declarations ({', '.join(_INSERTED)}) "
    + f"VALUES ({', '.join(_inserted_value(c) for c in _INSERTED)}) RETURNING seq, created_at"
)


def _json(value: Any) -> str:
    """JSON of an already JSON-ready value (dumped in mode="json", a rendered trace) for a
    jsonb parameter: pydantic-core's encoder, a few times faster than ``json.dumps``."""
    return to_json(value).decode()


async def insert_one(
    conn: asyncpg.Connection, row: dict[str, Any], event: OutboxEvent, *, service: str
) -> dict[str, Any]:
    """Insert one declaration row and queue ``service``'s event in one statement, on the
    asyncpg connection (:func:`driver`, or a direct route's pool connection); returns the row
    as stored: the server's ``seq`` and ``created_at`` from ``RETURNING``, every other column
    what was inserted (no second round trip; a ``Declaration`` of it: :func:`loaded`)."""
    params = {**queue_one_params(service, event), **row}
    for name in _JSON_COLUMNS:
        params[name] = to_json(row[name])
    for name in _NUMERIC:
        value = row[name]
        params[name] = None if value is None else str(value)
    stored = await conn.fetchrow(_INSERT_WITH_EVENT.sql, *_INSERT_WITH_EVENT.args(params))
    assert stored is not None
    return {**row, "seq": stored[0], "created_at": stored[1]}


@dataclass(frozen=True, slots=True)
class FilingContext:
    """What filing a return for a lodging-period needs to know, read in one statement."""

    lodging: LodgingRow
    #: ``{(kind, number)}`` of the lodging's certificates valid on a day of the period
    certificates: set[tuple[str, str]]
    #: ``(id, version)`` of the filer's latest version for the lodging-period, None for a first
    latest: tuple[str, int] | None
    #: the filer is a facilitator the lodging authorized for (part of) the period
    authorized: bool


_LODGING_COLUMNS = [c.name for c in Lodging.__table__.columns]
#: the lodging named by its tax account or id (if visible), its certificates valid in the
#: period, the filer's latest version (found by the filing's own columns: ``filing_id`` is
#: derived from them, but from the lodging's id, which the caller may not have sent) and
#: whether a facilitator filer is authorized for the period: ONE round trip (text arrays, not
#: records: a record type costs asyncpg a type introspection per connection)
_FILING_CONTEXT = DriverStatement(
    f"SELECT {', '.join('l.' + c for c in _LODGING_COLUMNS)}, "
    "ARRAY(SELECT ARRAY[c.kind, c.certificate_number] FROM certificates c "
    "WHERE c.lodging_id = l.lodging_id AND c.valid_from <= :last AND c.valid_to >= :first) AS certificates, "
    "(SELECT ARRAY[d.id, CAST(d.version AS text)] FROM declarations d WHERE d.lodging_id = l.lodging_id "
    "AND d.period = :period AND d.filer_kind = :filer_kind AND d.filer_id = :filer_id "
    "ORDER BY d.version DESC LIMIT 1) AS latest, "
    "(CAST(:filer_kind AS text) = 'facilitator' AND EXISTS (SELECT 1 FROM authorizations a "
    "WHERE a.lodging_id = l.lodging_id AND a.facilitator_id = :filer_id AND a.starts_on <= :last "
    "AND (a.ends_on IS NULL OR a.ends_on >= :first))) AS authorized "
    "FROM lodgings l WHERE (l.tax_account = :ref OR l.lodging_id = :ref) "
    "AND (CAST(:all AS boolean) OR l.operator_id = :operator OR EXISTS (SELECT 1 FROM authorizations v "
    "WHERE v.lodging_id = l.lodging_id AND v.facilitator_id = :facilitator))"
)


async def filing_context(
    conn: asyncpg.Connection,
    *,
    ref: str,
    period: Period,
    filer_kind: str | None,
    filer_id: str | None,
    visible_to: Principal | None,
) -> FilingContext | None:
    """The lodging ``ref`` (tax account or id) and what filing for ``period`` needs, None if
    there is no such lodging or ``visible_to`` may not see it (None: no restriction); a
    read (no lock: READ COMMITTED in a transaction or not). Visibility as
    :func:`filing.projection.repository.visible_lodgings`."""
    see_all = visible_to is None or visible_to.is_agency
    operator = None
    facilitator = None
    if visible_to is not None and visible_to.role == "operator":
        operator = visible_to.operator_id or ""
    elif visible_to is not None and visible_to.role == "facilitator":
        facilitator = visible_to.facilitator_id or ""
    params = {
        "ref": ref,
        "first": period.first_day,
        "last": period.last_day,
        "period": str(period),
        "filer_kind": filer_kind,
        "filer_id": filer_id,
        "all": see_all,
        "operator": operator,
        "facilitator": facilitator,
    }
    row = await conn.fetchrow(_FILING_CONTEXT.sql, *_FILING_CONTEXT.args(params))
    if row is None:
        return None
    values = tuple(row)
    n = len(_LODGING_COLUMNS)
    lodging = LodgingRow(*values[:n])  # the table's columns in order, as a schedule reads them
    certificates, latest, authorized = values[n:]
    return FilingContext(
        lodging=lodging,
        certificates={(kind, number) for kind, number in certificates},
        latest=None if latest is None else (latest[0], int(latest[1])),
        authorized=bool(authorized),
    )


#: what amending a declaration needs of it (``service.amend``), if the caller sees it
#: (:func:`visibility`): ONE round trip, on the asyncpg connection
_AMENDED = DriverStatement(
    "SELECT d.id, d.filing_id, d.lodging_id, d.period, d.filer_kind, d.filer_id FROM declarations d "
    "WHERE d.id = :id AND (CAST(:all AS boolean) "
    "OR d.lodging_id IN (SELECT l.lodging_id FROM lodgings l WHERE l.operator_id = :operator) "
    "OR (d.filer_kind = 'facilitator' AND d.filer_id = :facilitator))"
)


async def amended_visible(
    conn: asyncpg.Connection, principal: Principal, declaration_id: str
) -> Declaration | None:
    """The declaration ``declaration_id`` as :func:`get_visible` finds it, with only the
    columns an amendment reads (id, filing, lodging, period, filer): an instance of no
    session, whose other attributes are not loaded."""
    params = {
        "id": declaration_id,
        "all": principal.is_agency,
        "operator": (principal.operator_id or "") if principal.role == "operator" else None,
        "facilitator": (principal.facilitator_id or "") if principal.role == "facilitator" else None,
    }
    row = await conn.fetchrow(_AMENDED.sql, *_AMENDED.args(params))
    return None if row is None else loaded(Declaration, dict(row.items()))


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
            record[i] = _json(record[i])
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
