"""Every query of the accounts domain."""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, Literal, TypeVar

from sqlalchemy import ARRAY, BindParameter, Text, TextClause, any_, bindparam, func, select, text, union
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import defer

from assessment.accounts.ledger import BalanceCache, Facts
from assessment.casework.models import AdjustmentFact, AdjustmentReversal, RefundStep
from assessment.models import (
    CollectionPosting,
    Estimate,
    Liability,
    LodgingView,
    Notice,
    Payment,
    PaymentReversal,
    Refund,
)
from servicekit.auth import Principal
from servicekit.consumer import once_per_batch
from servicekit.runtime import Runtime
from taxcore.parameters import ParameterTree

#: where :func:`attach` keeps the cache in a sessionmaker's ``info`` (each session sees it)
BALANCES = "assessment.balances"
RUNTIME = "assessment.runtime"


def attach(
    sessionmaker: async_sessionmaker[AsyncSession], cache: BalanceCache, runtime: Runtime
) -> BalanceCache:
    """Give the sessions of ``sessionmaker`` (a worker's, an app's) ``cache`` and the owner's
    ``runtime``: the facts loaded through them use the cache (:func:`load_facts`), and the work
    deferred to the end of a consumer's batch (the accounts' recomputation) its clock."""
    sessionmaker.configure(info={**sessionmaker.kw.get("info", {}), BALANCES: cache, RUNTIME: runtime})
    return cache


def runtime_of(session: AsyncSession) -> Runtime:
    """The runtime of the session's owner (:func:`attach`)."""
    found = session.info.get(RUNTIME)
    if not isinstance(found, Runtime):
        raise LookupError("no runtime attached to this sessionmaker (accounts.repository.attach)")
    return found


def cache_of(session: AsyncSession) -> BalanceCache:
    """The cache of the session's owner (:func:`attach`: the app or worker, with its runtime's law)."""
    found = session.info.get(BALANCES)
    if not isinstance(found, BalanceCache):
        raise LookupError("no balance cache attached to this sessionmaker (accounts.repository.attach)")
    return found


def law_of(session: AsyncSession) -> ParameterTree:
    """The parameter tree of the session's owner (its balance cache's: the app's or worker's
    runtime law, :mod:`servicekit.runtime`)."""
    return cache_of(session).law


_LOCKED = "assessment.locked"
# session.info: (transaction, accounts it holds the lock of)
_ABSENT = "assessment.absent"  # session.info: (transaction, ids known not recorded)
_PREFETCHED = "assessment.prefetched"  # session.info: (transaction, the batch's lodgings)


def _of_transaction(session: AsyncSession, key: str) -> set[tuple[str, str]]:
    """A set kept in ``session.info`` for the session's current transaction only."""
    return transaction_state(session, key, set)


_S = TypeVar("_S")


def transaction_state(session: AsyncSession, key: str, new: Callable[[], _S]) -> _S:
    """An object kept in ``session.info`` under ``key`` for the session's current transaction
    only (made by ``new`` in each transaction): what a consumer's batch learnt in its set-up."""
    tx = session.sync_session.get_transaction()
    held: tuple[object, _S] | None = session.info.get(key)
    if held is None or held[0] is not tx:
        held = session.info[key] = (tx, new())
    return held[1]


async def lock_account(session: AsyncSession, tax_account: str) -> None:
    """Serialize every change of one tax account (consumers, jobs and requests alike)."""
    if ("account", tax_account) in _of_transaction(session, _LOCKED):
        return  # this transaction holds it already (a consumer batch locks its accounts first)
    await session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:a))"), {"a": tax_account})
    _of_transaction(session, _LOCKED).add(("account", tax_account))


# The batch's first statement also sets how PostgreSQL plans the rest of its transaction (all
# local to it). Every statement of a batch finds rows by key (accounts, ids, lodging-periods),
# whose indexes are the plan, but the planner's choice depends on statistics it may not have:
# - ``plan_cache_mode``: after five executions PostgreSQL may keep one generic plan per prepared
#   statement for the connection's life, costed on the tables as they were then (until an
#   ANALYZE of them): a worker started on empty tables kept sequential scans of the liabilities
#   and lodgings; each statement is now planned with its parameters (a fraction of a
#   millisecond), which also knows the arrays' lengths;
# - ``enable_seqscan``: even so planned, ``tax_account = ANY (200 accounts)`` on a table not
#   analyzed since it grew is estimated at 0.5% of the rows per value, i.e. the whole table,
#   and scanned whole (the liabilities on every load of the batch's facts). Off, a sequential
#   scan is the last resort, still taken where no index serves (the cross-checks' peers of a
#   municipality);
# - ``jit``: such a scan then costs 10^10, far above ``jit_above_cost``, and would be compiled
#   first (~280 ms for the municipality's lodgings against 40 ms to scan them): off, as it
#   should be for statements of a few milliseconds.
# The first two made the database's CPU per declaration grow with the rows already written (this
# server runs without autovacuum: no ANALYZE ever): 20,000-row schedule, 520 us in the first
# polls, 960 in the last; with both, 120 and 110 at 10,000 rows.
_LOCK_MANY = text(
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), "
    "set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true), "
    "count(pg_advisory_xact_lock(hashtext(a))) FROM "
    "(SELECT a FROM unnest(CAST(:a AS text[])) WITH ORDINALITY AS u(a, n) ORDER BY n) AS s"
)
# What the batch's handlers ask of its events, in one statement: which of its declaration
# versions (``k`` 0) and payments (1) are recorded, and the latest version of each filing of the
# lodging-periods it declares (2: account, period, filing, version, tax, fee, filer kind).
_RECORDED_AND_LATEST = text(
    "SELECT 0 AS k, declaration_id AS a, NULL::text AS period, NULL::text AS filing_id, "
    "NULL::integer AS version, NULL::numeric AS tax, NULL::numeric AS impact_fee, "
    "NULL::text AS filer_kind FROM liabilities WHERE declaration_id = ANY (CAST(:d AS text[])) "
    "UNION ALL SELECT 1, payment_id, NULL, NULL, NULL, NULL, NULL, NULL FROM payments "
    "WHERE payment_id = ANY (CAST(:p AS text[])) "
    "UNION ALL SELECT * FROM (SELECT DISTINCT ON (tax_account, period, filing_id) 2, tax_account, "
    "period, filing_id, version, tax, impact_fee, filer_kind FROM liabilities "
    "WHERE (tax_account, period) IN (SELECT * FROM unnest(CAST(:la AS text[]), CAST(:lp AS text[]))) "
    "ORDER BY tax_account, period, filing_id, version DESC) AS latest"
)


async def prepare_batch(
    session: AsyncSession,
    *,
    tax_accounts: Sequence[str],
    declarations: Sequence[str],
    payments: Sequence[str],
    periods: Sequence[tuple[str, str]] = (),
) -> None:
    """A consumer batch's set-up, in three statements: lock its accounts (in sorted order) and
    have the transaction's statements planned with their parameters (``_LOCK_MANY``); learn
    which of its declaration versions and payments are not recorded yet, and the latest
    version of each filing of the lodging-periods it declares (``periods``: (account, period);
    :func:`latest_period_amounts` and :func:`operator_filed` then answer from memory), in one
    (``_RECORDED_AND_LATEST``, after the locks: it reads what they guard); load its lodgings
    (the handlers then find them in the session, :func:`lodgings_of` too)."""
    accounts = sorted(set(tax_accounts))
    if not accounts:
        return
    await session.execute(_LOCK_MANY, {"a": accounts})
    _of_transaction(session, _LOCKED).update(("account", a) for a in accounts)
    pairs = sorted({p for p in periods if p[0] in set(accounts)})
    await write_held(session)
    known = _held(session).latest
    for pair in pairs:
        known.setdefault(pair, {})
    params = {
        "d": list(declarations),
        "p": list(payments),
        "la": [a for a, _ in pairs],
        "lp": [p for _, p in pairs],
    }
    found: set[tuple[str, str]] = set()
    for k, key, period, filing, version, tax, fee, kind in await session.execute(
        _RECORDED_AND_LATEST, params
    ):
        if k == 2:
            known[(key, period)][filing] = _Version(version, tax, fee, kind)
        else:
            found.add(("liability" if k == 0 else "payment", key))
    wanted = {("liability", d) for d in declarations} | {("payment", p) for p in payments}
    _of_transaction(session, _ABSENT).update(wanted - found)
    views = await session.execute(
        select(LodgingView).where(LodgingView.tax_account == any_(_accounts_param(accounts)))
    )
    found_views = {v.tax_account: v for v in views.scalars()}
    _prefetched(session).update({a: found_views.get(a) for a in accounts})


def _known_absent(session: AsyncSession, kind: str, key: str) -> bool:
    """Whether the batch's set-up found ``key`` not recorded; true once only (the caller
    records it now, so the next question goes to the database)."""
    absent = _of_transaction(session, _ABSENT)
    if (kind, key) in absent:
        absent.discard((kind, key))
        return True
    return False


async def liability_recorded(session: AsyncSession, declaration_id: str) -> bool:
    """Whether the declaration version's liability is already on the account."""
    if _known_absent(session, "liability", declaration_id):
        return False
    await write_held(session)
    stmt = select(Liability.id).where(Liability.declaration_id == declaration_id)
    return (await session.execute(stmt)).first() is not None


@dataclass(frozen=True, slots=True)
class _Version:
    """A filing's latest version of a lodging-period: what the period's assessment sums."""

    version: int
    tax: Decimal
    impact_fee: Decimal
    filer_kind: str


def _unnest_insert(table: str, columns: Mapping[str, str]) -> TextClause:
    """``INSERT INTO table (columns) SELECT ... FROM unnest(one array per column)``, the rows
    in the arrays' order. JSON goes as text (asyncpg's jsonb arrays want the codec's framing)
    and is cast per row."""
    return text(
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT "
        + ", ".join(f"CAST(u.{c} AS jsonb)" if t == "jsonb" else f"u.{c}" for c, t in columns.items())
        + " FROM unnest("
        + ", ".join(f"CAST(:{c} AS {'text' if t == 'jsonb' else t}[])" for c, t in columns.items())
        + f") WITH ORDINALITY AS u({', '.join(columns)}, n) ORDER BY u.n"
    )


def _unnest_params(columns: Mapping[str, str], rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The arrays of :func:`_unnest_insert` for ``rows``."""
    params: dict[str, list[Any]] = {}
    for c, t in columns.items():
        values = [r[c] for r in rows]
        params[c] = [json.dumps(v) for v in values] if t == "jsonb" else values
    return params


_LIABILITY_COLUMNS: dict[str, str] = {
    "declaration_id": "text",
    "filing_id": "text",
    "version": "integer",
    "supersedes": "text",
    "tax_account": "text",
    "lodging_id": "text",
    "jurisdiction": "text",
    "lodging_class": "text",
    "period": "text",
    "filer_kind": "text",
    "filer_id": "text",
    "filed_on": "date",
    "books_kept": "boolean",
    "input": "jsonb",
    "taxable_base": "numeric",
    "tax": "numeric",
    "impact_fee": "numeric",
    "declared_tax": "numeric",
    "declared_total": "numeric",
    "deficiency": "numeric",
    "deficiency_reason": "text",
    "findings": "jsonb",
    "trace": "jsonb",
    "event_id": "text",
}
_PAYMENT_COLUMNS: dict[str, str] = {
    "payment_id": "text",
    "tax_account": "text",
    "jurisdiction": "text",
    "amount": "numeric",
    "method": "text",
    "received_on": "date",
    "payer_kind": "text",
    "payer_id": "text",
    "designations": "jsonb",
    "source": "text",
}
#: the facts a consumer's batch holds (:func:`add_liability`, :func:`add_payment`): table ->
#: (columns, statement)
_HOLDABLE: dict[str, tuple[dict[str, str], TextClause]] = {
    t: (c, _unnest_insert(t, c))
    for t, c in (("liabilities", _LIABILITY_COLUMNS), ("payments", _PAYMENT_COLUMNS))
}


@dataclass(slots=True)
class _HeldFacts:
    """A transaction's liabilities and payments not written yet (:func:`add_liability`,
    :func:`add_payment`), and the latest version of each filing of the lodging-periods
    the batch's set-up looked up (these held rows included)."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    latest: dict[tuple[str, str], dict[str, _Version]] = field(default_factory=dict)
    writes: int = 0  # times written so far (each wave of held rows registers its own write)
    #: every liability row added in the transaction, held or written, in the order added
    added: list[dict[str, Any]] = field(default_factory=list)


_HELD = "assessment.held_facts"


def _held(session: AsyncSession) -> _HeldFacts:
    return transaction_state(session, _HELD, _HeldFacts)


async def _hold(session: AsyncSession, table: str, row: Mapping[str, Any]) -> None:
    """Hold ``row`` of ``table`` until :func:`write_held` (at the latest, the batch's end)."""
    held = _held(session)
    first = not held.rows
    held.rows.setdefault(table, []).append({c: row[c] for c in _HOLDABLE[table][0]})
    if first:
        wave = held.writes

        async def write() -> None:
            await write_held(session)

        await once_per_batch(session, ("held facts", wave), write)


async def write_held(session: AsyncSession) -> None:
    """Write the facts :func:`add_liability` and :func:`add_payment` hold (one statement
    per table, in order). Every query of this module that reads them calls it first; code
    that reads them in the same transaction by other means must too."""
    held = _held(session)
    if not held.rows:
        return
    tables, held.rows = held.rows, {}
    held.writes += 1
    for table, rows in tables.items():
        columns, insert = _HOLDABLE[table]
        await session.execute(insert, _unnest_params(columns, rows))


async def add_liability(session: AsyncSession, row: Mapping[str, Any]) -> None:
    """Record a declaration version's liability (``_LIABILITY_COLUMNS`` of ``row``).

    In a consumer's batch the row is held and the batch's rows are written in one
    statement (:func:`write_held`): before anything of this module reads facts again, else
    at the end of the batch (:func:`servicekit.consumer.once_per_batch`); outside a batch, now.
    """
    known = _held(session).latest.get((row["tax_account"], row["period"]))
    if known is not None:
        was = known.get(row["filing_id"])
        if was is None or row["version"] > was.version:
            known[row["filing_id"]] = _Version(
                row["version"], row["tax"], row["impact_fee"], row["filer_kind"]
            )
    _held(session).added.append(dict(row))
    await _hold(session, "liabilities", row)


def added_liabilities(session: AsyncSession) -> Sequence[Mapping[str, Any]]:
    """The liability rows :func:`add_liability` took in the session's current transaction, held
    or written, in the order taken (what a reader that cached the table earlier in the
    transaction has not seen: the cross-checks of a consumer's batch)."""
    return _held(session).added


async def add_payment(session: AsyncSession, row: Mapping[str, Any]) -> None:
    """Record a payment (``_PAYMENT_COLUMNS`` of ``row``), held as :func:`add_liability` holds."""
    await _hold(session, "payments", row)


async def operator_filed(session: AsyncSession, tax_account: str, period: str) -> bool:
    """Whether an operator's return is among the lodging-period's latest versions (the
    cross-checks compare the operator's return with the intermediaries')."""
    known = _held(session).latest.get((tax_account, period))
    if known is not None:
        return any(v.filer_kind == "operator" for v in known.values())
    await write_held(session)
    stmt = select(Liability.id).where(
        Liability.tax_account == tax_account, Liability.period == period, Liability.filer_kind == "operator"
    )
    return (await session.execute(stmt.limit(1))).first() is not None


async def payment_recorded(session: AsyncSession, payment_id: str) -> bool:
    """Whether the payment is already on the account."""
    if _known_absent(session, "payment", payment_id):
        return False
    await write_held(session)
    return await session.get(Payment, payment_id) is not None


_FACT_TABLES = (
    Liability,
    Estimate,
    Payment,
    PaymentReversal,
    Notice,
    Refund,
    AdjustmentFact,
    AdjustmentReversal,
    RefundStep,
)
_HAS_FACTS = text(
    "SELECT "
    + ", ".join(f"EXISTS (SELECT 1 FROM {m.__tablename__} WHERE tax_account = :a)" for m in _FACT_TABLES)
)
_HAS_FACTS_ANY = text(
    "SELECT "
    + ", ".join(
        f"EXISTS (SELECT 1 FROM {m.__tablename__} WHERE tax_account = ANY (CAST(:a AS text[])))"
        for m in _FACT_TABLES
    )
)


async def load_facts(session: AsyncSession, tax_account: str, *, traces: bool = True) -> Facts | None:
    """The account's facts; ``traces=False`` leaves what the recomputation never reads in the
    database (each liability's ``trace``, kilobytes of JSON per row read only by an explained
    statement, its declared ``input`` and ``findings``, and an estimate's ``trace``)."""
    return (await load_facts_many(session, [tax_account], traces=traces)).get(tax_account)


def _accounts_param(accounts: Sequence[str]) -> BindParameter[Any]:
    """The accounts as one array parameter (the statement's text is the same whatever their number)."""
    return bindparam("accounts", list(accounts), type_=ARRAY(Text()))


_LEAN: dict[type[Any], tuple[Any, ...]] = {
    Liability: (Liability.trace, Liability.input, Liability.findings),
    Estimate: (Estimate.trace,),
}


async def load_facts_many(
    session: AsyncSession, tax_accounts: Sequence[str], *, traces: bool = True
) -> dict[str, Facts]:
    """The facts of each of ``tax_accounts`` that has any, by account, with one query per
    fact table that holds rows of them (one round trip tells which do: a fresh account has
    one or two), whatever the number of accounts."""

    async def models(model: type[Any], accounts: list[str], where: dict[str, Any]) -> Iterable[Any]:
        column = model.tax_account
        match = column == where["a"] if len(accounts) == 1 else column == any_(_accounts_param(accounts))
        stmt = select(model).where(match)
        if not traces and model in _LEAN:
            stmt = stmt.options(*(defer(c, raiseload=True) for c in _LEAN[model]))
        return (await session.execute(stmt)).scalars()

    return await _load_many(session, tax_accounts, models)


_Rows = Callable[[type[Any], list[str], dict[str, Any]], Awaitable[Iterable[Any]]]


async def _load_many(session: AsyncSession, tax_accounts: Sequence[str], rows_of: _Rows) -> dict[str, Facts]:
    """:func:`load_facts_many` and :func:`load_records_many`: which fact tables hold rows of
    the accounts (one round trip), then ``rows_of`` each of those tables (its rows of the
    accounts, as models or as records: each has the model's ``tax_account``)."""
    await write_held(session)
    accounts = list(dict.fromkeys(tax_accounts))
    if not accounts:
        return {}
    one = len(accounts) == 1
    where = {"a": accounts[0]} if one else {"a": accounts}
    has = (await session.execute(_HAS_FACTS if one else _HAS_FACTS_ANY, where)).one()
    present: dict[type[object], bool] = dict(zip(_FACT_TABLES, has, strict=True))

    async def rows(model: type[Any]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {a: [] for a in accounts}
        if present[model]:
            for row in await rows_of(model, accounts, where):
                out[row.tax_account].append(row)
        return out

    lodgings = await lodgings_of(session, accounts)
    tables = [await rows(model) for model in _FACT_TABLES]
    return _facts_of(session, accounts, lodgings, *tables)


def _facts_of(
    session: AsyncSession,
    accounts: Sequence[str],
    lodgings: Mapping[str, LodgingView],
    liabilities: Mapping[str, list[Any]],
    estimates: Mapping[str, list[Any]],
    payments: Mapping[str, list[Any]],
    reversals: Mapping[str, list[Any]],
    notices: Mapping[str, list[Any]],
    refunds: Mapping[str, list[Any]],
    adjustments: Mapping[str, list[Any]],
    adjustment_reversals: Mapping[str, list[Any]],
    refund_steps: Mapping[str, list[Any]],
) -> dict[str, Facts]:
    """Each account's :class:`Facts` from its rows of each table (in ``_FACT_TABLES``' order),
    for the accounts that have any (a lodging or a fact with a jurisdiction)."""
    out: dict[str, Facts] = {}
    balances = cache_of(session)
    for a in accounts:
        lodging = lodgings.get(a)
        known: list[str] = [lodging.jurisdiction] if lodging is not None else []
        known += [x.jurisdiction for x in liabilities[a]] + [x.jurisdiction for x in estimates[a]]
        known += [x.jurisdiction for x in payments[a]] + [x.jurisdiction for x in notices[a]]
        if not known:
            continue
        out[a] = Facts(
            tax_account=a,
            jurisdiction=known[0],
            lodging=lodging,
            liabilities=liabilities[a],
            estimates=estimates[a],
            payments=payments[a],
            reversals=reversals[a],
            notices=notices[a],
            refunds=refunds[a],
            adjustments=adjustments[a],
            adjustment_reversals=adjustment_reversals[a],
            refund_steps=refund_steps[a],
            balances=balances,
        )
    return out


_Record = tuple[TextClause, Callable[[Iterable[Any]], Any]]
#: which columns a record has: every column, every column but ``_LEAN``'s, or only those a
#: recomputation reads (``_RECOMPUTED``)
RecordColumns = Literal["all", "lean", "recompute"]
_RECORDS: dict[tuple[type[Any], RecordColumns, bool], _Record] = {}

# The liabilities' columns that a consumer batch's recomputation (``service.recompute_accounts``)
# reads, and nothing else: 11 of 26. The readers: ``_facts_of`` (tax_account, jurisdiction),
# ``ledger.period_bases`` (period, filed_on, filing_id, version, filer_kind, tax, impact_fee,
# books_kept), ``ledger.refundable_until`` (period, filed_on), ``ledger.latest_fact_date``
# (filed_on) and ``Facts.lodging_class`` of an account without a lodging (filed_on,
# lodging_class). What is left out (the JSONB ``input``/``findings``/``trace``, the declared
# amounts, the ids, ``created_at``) only a statement or the cross-checks read: a long account's
# batch decoded 15,000 such rows, their numerics as Decimals, for nothing. A reader that comes to
# need another column fails on the record's missing attribute (AttributeError), never silently;
# ``services/assessment/tests/test_recompute_columns.py`` compares the recomputation from these
# records with the one from the ORM's full rows.
_RECOMPUTED: dict[type[Any], tuple[str, ...]] = {
    Liability: (
        "tax_account", "jurisdiction", "lodging_class", "period", "filing_id", "version",
        "filer_kind", "filed_on", "books_kept", "tax", "impact_fee",
    ),
}  # fmt: skip


def _record_attrs(model: type[Any], columns: RecordColumns) -> list[Any]:
    """The model's column attributes a record of ``columns`` has, in the table's order."""
    attrs = list(sa_inspect(model).column_attrs)
    if columns == "recompute" and model in _RECOMPUTED:
        return [a for a in attrs if a.key in _RECOMPUTED[model]]
    if columns == "all":
        return attrs
    lean = {c.key for c in _LEAN.get(model, ())}
    return [a for a in attrs if a.key not in lean]


def _fact_record(model: type[Any], *, columns: RecordColumns, one: bool) -> _Record:
    """The select of a fact table's ``columns`` (:func:`_record_attrs`) by account (``one``:
    ``= :a``, else ``= ANY (:a)``), as text: asyncpg's values as they come (the model's column
    types add nothing to them: numeric is Decimal, jsonb parsed by the connection's codec), at
    half the client CPU of the same Core select; and the maker of a row's named tuple, its
    fields named as the model's attributes (reading one costs a tenth of an ORM attribute, and a
    recomputation reads hundreds of thousands)."""
    found = _RECORDS.get((model, columns, one))
    if found is None:
        attrs = _record_attrs(model, columns)
        record = namedtuple(f"{model.__name__}Record", [a.key for a in attrs])  # type: ignore[misc]  # noqa: PYI024
        selected = ", ".join(f'"{a.columns[0].name}"' for a in attrs)
        match = "= :a" if one else "= ANY (CAST(:a AS text[]))"
        stmt = text(f"SELECT {selected} FROM {model.__tablename__} WHERE tax_account {match}")
        found = _RECORDS[(model, columns, one)] = (stmt, record._make)
    return found


async def load_facts_read_only(session: AsyncSession, tax_account: str, *, traces: bool) -> Facts | None:
    """The account's facts for a read (a statement): :func:`load_records_many` of one account."""
    columns: RecordColumns = "all" if traces else "lean"
    return (await load_records_many(session, [tax_account], columns=columns)).get(tax_account)


async def load_records_many(
    session: AsyncSession, tax_accounts: Sequence[str], *, columns: RecordColumns = "lean"
) -> dict[str, Facts]:
    """The facts of each of ``tax_accounts`` that has any, as :func:`load_facts_many` loads them
    (the same rows, statements and lodgings), as named tuples instead of ORM objects.

    A record has the model's columns as attributes, by name, and nothing else: no identity map,
    no change tracking, read only. What only reads the facts (the ledger: ``account_state``,
    ``period_statements``; a recomputation of a consumer's batch:
    ``service.recompute_accounts``) takes them as it takes the models; nothing may add to or
    change them (a refund, a notice loads :func:`load_facts`). ``columns``: "all"; "lean"
    leaves the ``_LEAN`` JSONB columns in the database, as :func:`load_facts` with
    ``traces=False`` does; "recompute" loads of the liabilities only what the recomputation
    reads (``_RECOMPUTED``: not enough for a statement). The session is flushed first: these
    selects are not the ORM's, which would.
    """
    await write_held(session)  # in the order the ORM's selects would: the held rows, then a flush
    await session.flush()

    async def records(model: type[Any], accounts: list[str], where: dict[str, Any]) -> Iterable[Any]:
        stmt, make = _fact_record(model, columns=columns, one=len(accounts) == 1)
        return map(make, await session.execute(stmt, where))

    return await _load_many(session, tax_accounts, records)


def _prefetched(session: AsyncSession) -> dict[str, LodgingView | None]:
    """The lodgings the consumer batch's set-up looked up (:func:`prepare_batch`): account ->
    its lodging, None where it has none (the transaction's)."""
    return transaction_state(session, _PREFETCHED, dict)


async def lodgings_of(session: AsyncSession, tax_accounts: Sequence[str]) -> dict[str, LodgingView]:
    """The accounts' lodgings: those the consumer batch's set-up looked up (found or not) as it
    found them, the others in one statement. (A select of a lodging already in the session
    gives the session's object as it is, so the set-up's are what it would give.)"""
    prepared = _prefetched(session)
    out: dict[str, LodgingView] = {}
    rest: list[str] = []
    for a in tax_accounts:
        if a not in prepared:
            rest.append(a)
        elif (view := prepared[a]) is not None:
            if sa_inspect(view).expired_attributes:  # refreshed by a write: read it again
                rest.append(a)
            else:
                out[a] = view
    if len(rest) == 1:
        view = await session.get(LodgingView, rest[0])
        if view is not None:
            out[rest[0]] = view
    elif rest:
        found = await session.execute(
            select(LodgingView).where(LodgingView.tax_account == any_(_accounts_param(rest)))
        )
        out |= {v.tax_account: v for v in found.scalars()}
    return out


def visible(principal: Principal, lodging: LodgingView | None) -> bool:
    """Agency roles see every account; an operator its own lodgings'; a facilitator none.

    A facilitator remits for a lodging but is not the taxpayer: the account's
    penalties, notices and credits are the operator's business (the facilitator
    sees what it filed and paid at the filing service).
    """
    if principal.is_agency:
        return True
    if principal.role == "operator" and lodging is not None:
        return lodging.operator_id == (principal.operator_id or "")
    return False


PostedTotals = dict[tuple[str, str, str], tuple[Decimal, int, str]]


async def posted_totals(session: AsyncSession, tax_account: str) -> PostedTotals:
    """(payment, period, component) -> (sum posted, number of postings, section)."""
    return (await posted_totals_many(session, [tax_account])).get(tax_account, {})


async def posted_totals_many(session: AsyncSession, tax_accounts: Sequence[str]) -> dict[str, PostedTotals]:
    """:func:`posted_totals` of each account, in one query."""
    out: dict[str, PostedTotals] = {a: {} for a in tax_accounts}
    if not tax_accounts:
        return out
    stmt = (
        select(
            CollectionPosting.tax_account,
            CollectionPosting.payment_id,
            CollectionPosting.period,
            CollectionPosting.component,
            func.sum(CollectionPosting.amount),
            func.count(),
            func.max(CollectionPosting.section),
        )
        .where(CollectionPosting.tax_account == any_(_accounts_param(tax_accounts)))
        .group_by(
            CollectionPosting.tax_account,
            CollectionPosting.payment_id,
            CollectionPosting.period,
            CollectionPosting.component,
        )
    )
    for r in (await session.execute(stmt)).all():
        out[r[0]][(r[1], r[2], r[3])] = (Decimal(r[4]), int(r[5]), str(r[6]))
    return out


_POSTING_COLUMNS: dict[str, str] = {
    "posting_id": "text",
    "payment_id": "text",
    "tax_account": "text",
    "period": "text",
    "component": "text",
    "amount": "numeric",
    "collected_on": "date",
    "section": "text",
}
_INSERT_POSTINGS = _unnest_insert("collection_postings", _POSTING_COLUMNS)


async def insert_postings(session: AsyncSession, rows: Sequence[Mapping[str, object]]) -> None:
    """Append collection postings (``_POSTING_COLUMNS`` of each row) in one statement."""
    if rows:
        await session.execute(_INSERT_POSTINGS, _unnest_params(_POSTING_COLUMNS, rows))


_SUMMARY_COLUMNS: dict[str, str] = {
    "period": "text",
    "jurisdiction": "text",
    "lodging_class": "text",
    "operator_id": "text",
    "due_date": "date",
    "basis": "text",
    "principal": "numeric",
    "total_assessed": "numeric",
    "total_paid": "numeric",
    "balance": "numeric",
    "as_of": "date",
    "balance_digest": "bytea",
}
#: a summary row: its key and :data:`_SUMMARY_COLUMNS`, as ``service.summary_rows`` makes it
SUMMARY_FIELDS = ("tax_account", *_SUMMARY_COLUMNS)
_SET_SUMMARY = [c for c in _SUMMARY_COLUMNS if c != "period"]
_PAIRS = "SELECT * FROM unnest(CAST(:{0}_account AS text[]), CAST(:{0}_period AS text[]))"
# Upsert the rows given, and of those only the ones that differ, after dropping the summaries of
# the accounts' periods no longer known: given the periods known (``_UPSERT_SUMMARIES``: every
# other row of the accounts is dropped) or the rows to drop (``_UPSERT_SUMMARIES_GONE``). One
# statement, the same text whatever the number of accounts and periods (prepared once per
# connection). The two parts touch disjoint rows, so running them in one statement's snapshot
# is safe.
_UPSERT_ROWS = (
    f"INSERT INTO account_summaries ({', '.join(SUMMARY_FIELDS)}) "
    f"SELECT {', '.join(f'u.{c}' for c in SUMMARY_FIELDS)} FROM unnest("
    "CAST(:tax_account AS text[]), "
    + ", ".join(f"CAST(:{c} AS {t}[])" for c, t in _SUMMARY_COLUMNS.items())
    + f") AS u({', '.join(SUMMARY_FIELDS)}) "
    "ON CONFLICT (tax_account, period) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _SET_SUMMARY)
    + ", refreshed_at = now() WHERE "
    + f"({', '.join(f'account_summaries.{c}' for c in _SET_SUMMARY)}) IS DISTINCT FROM "
    + f"({', '.join(f'excluded.{c}' for c in _SET_SUMMARY)})"
)
_UPSERT_SUMMARIES = text(
    "WITH gone AS (DELETE FROM account_summaries WHERE tax_account = ANY (CAST(:accounts AS text[])) "
    f"AND NOT ((tax_account, period) IN ({_PAIRS.format('kept')}))) " + _UPSERT_ROWS
)
_UPSERT_SUMMARIES_GONE = text(
    f"WITH gone AS (DELETE FROM account_summaries WHERE (tax_account, period) IN ({_PAIRS.format('gone')})) "
    + _UPSERT_ROWS
)


async def upsert_summaries(
    session: AsyncSession,
    rows: Sequence[Mapping[str, object]],
    tax_accounts: str | Sequence[str],
    *,
    gone: Sequence[tuple[str, str]] | None = None,
) -> None:
    """Make the per-period summaries of ``tax_accounts`` ``rows`` (one round trip): the
    account-periods not in ``rows`` are dropped, ``rows`` upserted (a row equal to the stored
    one is left as it is, ``refreshed_at`` too).

    ``gone``: the account-periods to drop instead, as the caller found them among the rows it
    read in this transaction under the accounts' locks (:func:`stored_summaries`: a batch's
    recomputation, whose ``rows`` are then only those that changed). Nothing to drop and no
    row: no statement (a long account's steady batch sent the 15,000 keys it kept for
    PostgreSQL to anti-join with the accounts' every row, to drop none)."""
    accounts = [tax_accounts] if isinstance(tax_accounts, str) else list(tax_accounts)
    assert {r["tax_account"] for r in rows} <= set(accounts)
    params: dict[str, object] = {c: [r[c] for r in rows] for c in SUMMARY_FIELDS}
    if gone is not None:
        if rows or gone:
            params |= {"gone_account": [a for a, _ in gone], "gone_period": [p for _, p in gone]}
            await session.execute(_UPSERT_SUMMARIES_GONE, params)
        return
    keys = [(str(r["tax_account"]), str(r["period"])) for r in rows]
    params |= {"kept_account": [a for a, _ in keys], "kept_period": [p for _, p in keys]}
    await session.execute(_UPSERT_SUMMARIES, {"accounts": accounts, **params})


#: the figures of a summary row (numeric), which a row with a balance digest is read without
SUMMARY_FIGURES = ("principal", "total_assessed", "total_paid", "balance")
_STORED_SUMMARIES = text(
    "SELECT "
    + ", ".join(
        f"CASE WHEN balance_digest IS NULL THEN {c} END AS {c}" if c in SUMMARY_FIGURES else c
        for c in SUMMARY_FIELDS
    )
    + " FROM account_summaries WHERE tax_account = ANY (CAST(:accounts AS text[]))"
)


#: a stored summary row: the values of :data:`SUMMARY_FIELDS` in that order (a tuple: a
#: recomputation reads every row of its accounts, and compares each with the one it computes),
#: its figures None where it has a balance digest (:func:`stored_summaries`)
StoredSummary = tuple[object, ...]
#: where each of :data:`SUMMARY_FIELDS` is in a :data:`StoredSummary`
SUMMARY_INDEX = {name: i for i, name in enumerate(SUMMARY_FIELDS)}


async def stored_summaries(
    session: AsyncSession, tax_accounts: Sequence[str]
) -> dict[str, dict[str, StoredSummary]]:
    """The summary rows of ``tax_accounts`` as stored: account -> period -> row, the figures
    (:data:`SUMMARY_FIGURES`) of a row with a balance digest left in the database (None): the
    digest stands for them (the same digest, the same figures), and a steady batch of long
    accounts compares all but a few of its 15,000 rows by it; decoding their four numerics as
    Decimals was most of the cost of reading them."""
    out: dict[str, dict[str, StoredSummary]] = {a: {} for a in tax_accounts}
    if tax_accounts:
        for r in await session.execute(_STORED_SUMMARIES, {"accounts": list(tax_accounts)}):
            out[r[0]][r[1]] = tuple(r)
    return out


async def all_lodgings(session: AsyncSession) -> Sequence[LodgingView]:
    return (await session.execute(select(LodgingView).order_by(LodgingView.tax_account))).scalars().all()


async def filed_periods(session: AsyncSession, tax_account: str, *, on: date) -> set[str]:
    """Periods of the account with a declaration filed on or before ``on``."""
    await write_held(session)
    stmt = select(Liability.period).where(Liability.tax_account == tax_account, Liability.filed_on <= on)
    return {r[0] for r in (await session.execute(stmt)).all()}


async def estimated_periods(session: AsyncSession, tax_account: str) -> set[str]:
    """Periods of the account that already have an estimated assessment."""
    stmt = select(Estimate.period).where(Estimate.tax_account == tax_account)
    return {r[0] for r in (await session.execute(stmt)).all()}


async def all_tax_accounts(session: AsyncSession) -> list[str]:
    await write_held(session)
    stmt = union(select(LodgingView.tax_account), select(Liability.tax_account), select(Payment.tax_account))
    return sorted(str(r[0]) for r in (await session.execute(stmt)).all())


@dataclass(frozen=True, slots=True)
class PeriodBase:
    """What a filed period declared, summed over its filers: the estimate's history entry."""

    taxable_base: Decimal
    impact_fee: Decimal


async def latest_bases_before(
    session: AsyncSession, tax_account: str, period: str, as_of: date
) -> list[PeriodBase]:
    """Taxable base and impact fee of each earlier period (latest version per filer, summed),
    oldest first: the VI estimate takes the highest fee of the history (taxcore.rules.estimate)."""
    await write_held(session)
    rows = (
        (
            await session.execute(
                select(Liability).where(
                    Liability.tax_account == tax_account,
                    Liability.period < period,
                    Liability.filed_on <= as_of,
                )
            )
        )
        .scalars()
        .all()
    )
    latest: dict[tuple[str, str], Liability] = {}
    for row in rows:
        key = (row.period, row.filing_id)
        if key not in latest or row.version > latest[key].version:
            latest[key] = row
    bases: dict[str, tuple[Decimal, Decimal]] = {}
    for (p, _), row in latest.items():
        base, fee = bases.get(p, (Decimal(0), Decimal(0)))
        bases[p] = (base + row.taxable_base, fee + row.impact_fee)
    return [PeriodBase(*bases[p]) for p in sorted(bases)]


async def latest_period_amounts(
    session: AsyncSession, tax_account: str, period: str
) -> list[tuple[Decimal, Decimal]]:
    """(tax, impact fee) of the latest version of each filing of the account's period."""
    known = _held(session).latest.get((tax_account, period))
    if known is not None:
        return [(v.tax, v.impact_fee) for _, v in sorted(known.items())]
    await write_held(session)
    stmt = (
        select(Liability.tax, Liability.impact_fee)
        .where(Liability.tax_account == tax_account, Liability.period == period)
        .ext(distinct_on(Liability.filing_id))
        .order_by(Liability.filing_id, Liability.version.desc())
    )
    return [(r[0], r[1]) for r in (await session.execute(stmt)).all()]
