"""Every ledger query: accounts, entries and lines, balances."""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from sqlalchemy import (
    Executable,
    Integer,
    bindparam,
    column,
    func,
    literal,
    not_,
    or_,
    select,
    table,
    text,
    union_all,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from distribution.ledger.accounts import AccountSpec
from distribution.models import Account, Collection, JournalEntry, JournalLine
from taxcore.events.assessment import CollectionPosted


@dataclass(frozen=True, slots=True)
class Line:
    account: AccountSpec
    amount: Decimal
    """Positive: debit; negative: credit."""
    rule: str | None = None
    section: str | None = None


async def ensure_accounts(session: AsyncSession, specs: Sequence[AccountSpec]) -> None:
    if not specs:
        return
    rows = {
        s.code: {
            "code": s.code,
            "jurisdiction": s.jurisdiction,
            "kind": s.kind,
            "name": s.name,
            "section": s.section,
        }
        for s in specs
    }
    await session.execute(insert(Account).values(list(rows.values())).on_conflict_do_nothing())


# An entry and its lines in ONE statement: the ledger checks the balance when a statement
# ends (migration 20261202_statement_balance), so an entry cannot be written before its lines.
_ADD_ENTRY = text(
    """
WITH entry AS (
    INSERT INTO stored_journal_entries (jurisdiction, kind, effective_on, description, event_id, run_id,
        reverses_entry_id)
    VALUES (:jurisdiction, :kind, :effective_on, :description, :event_id, :run_id, :reverses_entry_id)
    RETURNING id
), lines AS (
    INSERT INTO stored_journal_lines (entry_id, account_code, amount, rule, section)
    SELECT entry.id, l.account_code, l.amount, l.rule, l.section
    FROM entry CROSS JOIN unnest(CAST(:account_code AS text[]), CAST(:amount AS numeric[]),
        CAST(:rule AS text[]), CAST(:section AS text[])) WITH ORDINALITY
        AS l(account_code, amount, rule, section, ord)
    ORDER BY l.ord
)
SELECT id FROM entry
"""
)


async def add_entry(
    session: AsyncSession,
    *,
    jurisdiction: str,
    kind: str,
    effective_on: date,
    description: str,
    lines: Sequence[Line],
    event_id: str | None = None,
    run_id: str | None = None,
    reverses_entry_id: int | None = None,
) -> int:
    """Write an entry and its non-zero ``lines`` together; returns the entry's id. The
    database refuses the statement if they do not balance."""
    await ensure_accounts(session, [line.account for line in lines])
    kept = [line for line in lines if line.amount != 0]
    entry_id = await session.scalar(
        _ADD_ENTRY,
        {
            "jurisdiction": jurisdiction,
            "kind": kind,
            "effective_on": effective_on,
            "description": description,
            "event_id": event_id,
            "run_id": run_id,
            "reverses_entry_id": reverses_entry_id,
            "account_code": [line.account.code for line in kept],
            "amount": [line.amount for line in kept],
            "rule": [line.rule for line in kept],
            "section": [line.section for line in kept],
        },
    )
    return int(entry_id)


#: the columns of a collection row that are the posting's own
AS_POSTED = (
    "posting_id payment_id tax_account jurisdiction lodging_class period component amount "
    "collected_on section refund_id"
).split()


#: the batch's columns, in the order of the statement's ``ROWS FROM``
BATCH_COLUMNS = ("event_id", *AS_POSTED, "pending_section")
#: the columns sent as the posting's own text (the others are formatted: amount, collected_on)
_TEXT_COLUMNS = tuple(name for name in AS_POSTED if name not in ("amount", "collected_on"))
_text_values = operator.attrgetter(*_TEXT_COLUMNS)

# One statement for a whole batch: the accounts the lines need; the postings not booked yet,
# each posting_id looked up in the unique index by a subquery per row (NOT EXISTS became a hash
# anti-join that read all of ``collections`` for every batch: 7 ms a batch at 20,000 rows); each
# given its entry's id from the entries' identity sequence as the rows are read, in the batch's
# order (the JSON function scan's ordinality: the planner needs no sort for ``ORDER BY ord``), so
# that the collection rows are written from the batch alone; the sequence is looked up once per
# statement (an InitPlan: ``pg_get_serial_sequence`` called per row read the catalog's
# dependencies 200 times a batch, 2.5-10 us a row, and cast its text to ``regclass`` each time).
# A posting_id twice in the batch is booked once, the first, by ``add_collections`` before the
# statement (a ``DISTINCT ON (posting_id)`` here sorted the batch by posting_id, and the entries'
# ids then needed the batch materialized and sorted back into its order: ~0.5 ms a batch of 200,
# bench/README.md, session 13). A collection row IS its journal entry (view ``journal_entries``,
# migration 0010_derived_collection_entries: it keeps the entry's id; the view
# ``collection_entries`` writes its description from the row, 0013_derived_descriptions) and its
# entry's two lines (debit cash, credit pending: view ``journal_lines``, migration
# 0009_derived_collection_lines; ``pending_section`` is the pending line's citation). The
# references are checked at the statement's end (statement trigger).
# The batch's columns come as one JSON array each (``json_array_elements_text`` zipped by
# ``ROWS FROM``), not as ``text[]``: asyncpg checks every element of an array against two
# ``collections.abc`` classes before encoding it (a Python-level ``isinstance`` each), 62,000 of
# the process's 246,000 instructions per event; ``json.dumps`` of a column is a C loop
# (bench/README.md, session 12). JSON's null is SQL NULL (``refund_id``, ``pending_section``).
_ADD_COLLECTIONS = text(
    f"""
WITH new_accounts AS (
    INSERT INTO accounts (code, jurisdiction, kind, name, section)
    SELECT * FROM unnest(CAST(:account_code AS text[]), CAST(:account_jurisdiction AS text[]),
        CAST(:account_kind AS text[]), CAST(:account_name AS text[]), CAST(:account_section AS text[]))
    ON CONFLICT DO NOTHING
)
INSERT INTO collections (posting_id, event_id, payment_id, tax_account, jurisdiction, lodging_class,
    period, component, amount, collected_on, section, entry_id, pending_section, refund_id,
    entry_derived)
SELECT b.posting_id, b.event_id, b.payment_id, b.tax_account, b.jurisdiction, b.lodging_class, b.period,
    b.component, CAST(b.amount AS numeric), CAST(b.collected_on AS date), b.section,
    nextval((SELECT CAST(pg_get_serial_sequence('stored_journal_entries', 'id') AS regclass))),
    b.pending_section, b.refund_id, true
FROM ROWS FROM ({", ".join(f"json_array_elements_text(CAST(:{c} AS json))" for c in BATCH_COLUMNS)})
    WITH ORDINALITY AS b({", ".join(BATCH_COLUMNS)}, ord)
WHERE (SELECT true FROM collections c WHERE c.posting_id = b.posting_id LIMIT 1) IS NULL
ORDER BY b.ord
"""
)


async def add_collections(
    session: AsyncSession,
    postings: Sequence[tuple[str, CollectionPosted]],
    *,
    pending_sections: Sequence[str | None],
    accounts: Mapping[str, tuple[AccountSpec, AccountSpec]],
) -> int:
    """Book ``(event id, posting)`` pairs in order, each with its pending line's section, on its
    jurisdiction's ``(cash, pending)`` accounts (created if missing; see ``_ADD_COLLECTIONS``);
    returns how many were new (a posting_id twice in ``postings``: the first). Column by column:
    a batch is sent as one JSON array per column."""
    if not postings:
        return 0
    posted = [p for _, p in postings]
    if len({p.posting_id for p in posted}) < len(posted):  # one redelivered under another event id
        first: dict[str, int] = {}
        for i, p in enumerate(posted):
            first.setdefault(p.posting_id, i)
        postings = [postings[i] for i in first.values()]
        posted = [posted[i] for i in first.values()]
        pending_sections = [pending_sections[i] for i in first.values()]
    dumps = json.dumps
    # the text columns: each posting's values in one C call, transposed (``zip``) into columns
    transposed = zip(*map(_text_values, posted), strict=True)
    columns: dict[str, object] = dict(zip(_TEXT_COLUMNS, map(dumps, transposed), strict=True))
    # the amounts as their decimal text (exact), the days in ISO form, as the casts read them
    columns["amount"] = dumps([str(p.amount) for p in posted])
    columns["collected_on"] = dumps([p.collected_on.isoformat() for p in posted])
    columns["event_id"] = dumps([event_id for event_id, _ in postings])
    columns["pending_section"] = dumps(list(pending_sections))
    for j, (cash, pending) in accounts.items():  # the codes the view ``journal_lines`` derives
        if (cash.code, pending.code) != (f"cash:{j}", f"pending:{j}"):
            raise ValueError(f"{j}: a collection's lines are derived on cash:{j} and pending:{j}")
    specs = [spec for pair in accounts.values() for spec in pair]
    for name in ("code", "jurisdiction", "kind", "name", "section"):
        columns[f"account_{name}"] = [getattr(s, name) for s in specs]
    result = await session.execute(_ADD_COLLECTIONS, columns)
    return int(getattr(result, "rowcount", 0))


# the stored tables behind the views ``journal_entries`` and ``journal_lines`` (migrations
# 0009_derived_collection_lines and 0010_derived_collection_entries), and the view of the entries
# that are collection rows, each with its lodging (0013_derived_descriptions)
_STORED_ENTRIES = table(
    "stored_journal_entries",
    *(
        column(name)
        for name in (
            "id jurisdiction kind effective_on description event_id run_id reverses_entry_id posted_at"
        ).split()
    ),
)
_STORED_LINES = table("stored_journal_lines", column("entry_id"), column("account_code"), column("amount"))
_COLLECTION_ENTRIES = table(
    "collection_entries", *(column(name) for name in [*_STORED_ENTRIES.c.keys(), "tax_account"])
)


async def account_totals(
    session: AsyncSession, *, jurisdiction: str | None, as_of: date | None
) -> list[tuple[Account, Decimal, Decimal]]:
    """Each account with its total debits and credits (credits positive) up to ``as_of``.

    What the view ``journal_lines`` joined to ``journal_entries`` gives, summed without joining
    the two views (a union each: the planner scanned every collection row to hash one side):

    * the stored lines (runs, reversals, collections booked before their lines were derived),
      with ``as_of`` each line's entry looked up by id where it is (stored, or a collection row
      that is its entry);
    * the lines derived from the collection rows, summed per jurisdiction straight from the rows
      in one pass (cash debited the amount, pending credited it), on their entry's day (the row's
      ``collected_on`` when the row is its entry, else its stored entry's ``effective_on``). The
      two accounts a row's lines name are ``cash:<j>`` and ``pending:<j>`` of the row's
      jurisdiction (``add_collections`` refuses others), so a jurisdiction's accounts need only
      its rows (a range of ``ix_collections_jurisdiction_entry_id``)."""
    lines, entries, c = _STORED_LINES.c, _STORED_ENTRIES.c, Collection
    stored = select(
        lines.account_code.label("code"),
        func.greatest(lines.amount, 0).label("debit"),
        func.greatest(-lines.amount, 0).label("credit"),
    )
    own_day = select(c.jurisdiction, c.amount).where(c.lines_derived, c.entry_derived)
    stored_day = (
        select(c.jurisdiction, c.amount)
        .join(_STORED_ENTRIES, entries.id == c.entry_id)
        .where(c.lines_derived, not_(c.entry_derived))
    )
    if as_of is not None:
        stored = stored.where(
            or_(
                select(entries.id)
                .where(entries.id == lines.entry_id, entries.effective_on <= as_of)
                .exists(),
                select(c.id)
                .where(c.entry_id == lines.entry_id, c.entry_derived, c.collected_on <= as_of)
                .exists(),
            )
        )
        own_day = own_day.where(c.collected_on <= as_of)
        stored_day = stored_day.where(entries.effective_on <= as_of)
    if jurisdiction is not None:
        own_day = own_day.where(c.jurisdiction == jurisdiction)
        stored_day = stored_day.where(c.jurisdiction == jurisdiction)
    rows = union_all(own_day, stored_day).subquery()
    derived = (
        select(
            rows.c.jurisdiction.label("j"),
            func.sum(func.greatest(rows.c.amount, 0)).label("positive"),
            func.sum(func.greatest(-rows.c.amount, 0)).label("negative"),
        )
        .group_by(rows.c.jurisdiction)
        .cte("derived")
    )
    cash = select((literal("cash:") + derived.c.j).label("code"), derived.c.positive, derived.c.negative)
    pending = select(
        (literal("pending:") + derived.c.j).label("code"), derived.c.negative, derived.c.positive
    )
    every = union_all(stored, cash, pending).subquery()
    sums = (
        select(
            every.c.code,
            func.coalesce(func.sum(every.c.debit), 0).label("debit"),
            func.coalesce(func.sum(every.c.credit), 0).label("credit"),
        )
        .group_by(every.c.code)
        .subquery()
    )
    stmt = (
        select(Account, func.coalesce(sums.c.debit, 0), func.coalesce(sums.c.credit, 0))
        .outerjoin(sums, sums.c.code == Account.code)
        .order_by(Account.jurisdiction, Account.kind, Account.code)
    )
    if jurisdiction is not None:
        stmt = stmt.where(Account.jurisdiction == jurisdiction)
    return [(a, Decimal(d), Decimal(k)) for a, d, k in (await session.execute(stmt)).all()]


@functools.cache
def _entries_page(*, jurisdiction: bool, run: bool, tax_account: bool, after: bool) -> Executable:
    """A page of ``journal_entries`` in id order, read as the stored entries' page and the
    derived entries' page merged (each its own ``ORDER BY ... LIMIT``, so each is an index scan:
    over the view the planner sorted all of ``collections`` for every page). Built once per
    combination of filters (bound parameters ``jurisdiction``, ``run_id``, ``tax_account``,
    ``after``, ``size``): building the union cost more than its planning."""
    entries, c = _STORED_ENTRIES.c, Collection
    size = bindparam("size", type_=Integer)
    stored = select(*_STORED_ENTRIES.c)
    if jurisdiction:
        stored = stored.where(entries.jurisdiction == bindparam("jurisdiction"))
    if run:
        stored = stored.where(entries.run_id == bindparam("run_id"))
    if tax_account:  # a lodging's collections (runs net every lodging together)
        stored = stored.where(  # a probe per stored entry (few: runs, and older collections)
            select(c.id).where(c.entry_id == entries.id, c.tax_account == bindparam("tax_account")).exists()
        )
    if after:
        stored = stored.where(entries.id > bindparam("after"))
    pages = [stored.order_by(entries.id).limit(size)]
    if not run:  # a derived entry is a collection's, never a run's
        d = _COLLECTION_ENTRIES.c
        derived = select(*(d[name] for name in _STORED_ENTRIES.c.keys()))
        if jurisdiction:
            derived = derived.where(d.jurisdiction == bindparam("jurisdiction"))
        if tax_account:
            derived = derived.where(d.tax_account == bindparam("tax_account"))
        if after:
            derived = derived.where(d.id > bindparam("after"))
        pages.append(derived.order_by(d.id).limit(size))
    merged = union_all(*pages).subquery()
    return select(JournalEntry).from_statement(select(merged).order_by(merged.c.id).limit(size))


async def list_entries(
    session: AsyncSession,
    *,
    jurisdiction: str | None,
    run_id: str | None,
    after: int | None,
    limit: int,
    tax_account: str | None = None,
) -> Sequence[JournalEntry]:
    """Up to ``limit + 1`` entries in id order after ``after`` (see :func:`_entries_page`)."""
    given = {"jurisdiction": jurisdiction, "run_id": run_id, "tax_account": tax_account, "after": after}
    stmt = _entries_page(
        jurisdiction=jurisdiction is not None,
        run=run_id is not None,
        tax_account=tax_account is not None,
        after=after is not None,
    )
    params = {k: v for k, v in given.items() if v is not None}
    return (await session.execute(stmt, {**params, "size": limit + 1})).scalars().all()


async def lines_of(session: AsyncSession, entry_ids: Sequence[int]) -> dict[int, list[JournalLine]]:
    out: dict[int, list[JournalLine]] = {i: [] for i in entry_ids}
    if not entry_ids:
        return out
    rows = await session.execute(
        select(JournalLine).where(JournalLine.entry_id.in_(entry_ids)).order_by(JournalLine.id)
    )
    for line in rows.scalars():
        out[line.entry_id].append(line)
    return out
