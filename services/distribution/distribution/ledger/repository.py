"""Every ledger query: accounts, entries and lines, balances."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from sqlalchemy import func, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from distribution.ledger.accounts import AccountSpec
from distribution.models import Account, Collection, JournalEntry, JournalLine


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


async def check_balanced(session: AsyncSession) -> None:
    """Fire the deferred balance triggers now (they would otherwise wait for COMMIT)."""
    await session.execute(text("SET CONSTRAINTS journal_entries_balanced, journal_lines_balanced IMMEDIATE"))
    await session.execute(text("SET CONSTRAINTS journal_entries_balanced, journal_lines_balanced DEFERRED"))


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
) -> JournalEntry:
    await ensure_accounts(session, [line.account for line in lines])
    entry = JournalEntry(
        jurisdiction=jurisdiction,
        kind=kind,
        effective_on=effective_on,
        description=description,
        event_id=event_id,
        run_id=run_id,
        reverses_entry_id=reverses_entry_id,
    )
    session.add(entry)
    await session.flush()
    session.add_all(
        JournalLine(
            entry_id=entry.id,
            account_code=line.account.code,
            amount=line.amount,
            rule=line.rule,
            section=line.section,
        )
        for line in lines
        if line.amount != 0
    )
    await session.flush()
    await check_balanced(session)
    return entry


async def account_totals(
    session: AsyncSession, *, jurisdiction: str | None, as_of: date | None
) -> list[tuple[Account, Decimal, Decimal]]:
    """Each account with its total debits and credits (credits positive) up to ``as_of``."""
    debit = func.coalesce(func.sum(func.greatest(JournalLine.amount, 0)), 0)
    credit = func.coalesce(func.sum(func.greatest(-JournalLine.amount, 0)), 0)
    joined = JournalLine.__table__.join(JournalEntry.__table__, JournalLine.entry_id == JournalEntry.id)
    sums = select(JournalLine.account_code.label("code"), debit.label("debit"), credit.label("credit"))
    sums = sums.select_from(joined)
    if as_of is not None:
        sums = sums.where(JournalEntry.effective_on <= as_of)
    sub = sums.group_by(JournalLine.account_code).subquery()
    stmt = (
        select(Account, func.coalesce(sub.c.debit, 0), func.coalesce(sub.c.credit, 0))
        .outerjoin(sub, sub.c.code == Account.code)
        .order_by(Account.jurisdiction, Account.kind, Account.code)
    )
    if jurisdiction is not None:
        stmt = stmt.where(Account.jurisdiction == jurisdiction)
    return [(a, Decimal(d), Decimal(c)) for a, d, c in (await session.execute(stmt)).all()]


async def list_entries(
    session: AsyncSession,
    *,
    jurisdiction: str | None,
    run_id: str | None,
    after: int | None,
    limit: int,
    tax_account: str | None = None,
) -> Sequence[JournalEntry]:
    stmt = select(JournalEntry).order_by(JournalEntry.id).limit(limit + 1)
    if jurisdiction is not None:
        stmt = stmt.where(JournalEntry.jurisdiction == jurisdiction)
    if run_id is not None:
        stmt = stmt.where(JournalEntry.run_id == run_id)
    if tax_account is not None:  # a lodging's collections (runs net every lodging together)
        stmt = stmt.where(
            JournalEntry.id.in_(select(Collection.entry_id).where(Collection.tax_account == tax_account))
        )
    if after is not None:
        stmt = stmt.where(JournalEntry.id > after)
    return (await session.execute(stmt)).scalars().all()


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
