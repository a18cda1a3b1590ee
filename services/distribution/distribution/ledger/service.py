"""Ledger use-cases: book a collection (from ``collection.posted``), read balances."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from distribution.ledger import accounts, repository
from distribution.models import Account
from servicekit.consumer import once_per_batch
from taxcore.events.assessment import CollectionPosted
from taxcore.money import ZERO
from taxcore.parameters import ParameterTree

_PENDING = "distribution.collections.pending"


async def record_collection(
    session: AsyncSession, *, event_id: str, posting: CollectionPosted, law: ParameterTree
) -> None:
    """Debit cash, credit the jurisdiction's collections pending distribution.

    A negative amount (assessment re-applied a payment, or a paid refund took
    money the funds had received: ``refund_id``) books the opposite entry: cash
    leaves, and the next run nets it with the other collections, so the funds
    give their shares back by the same rule that gave them. Idempotent on the
    event id (inbox) and on ``posting_id`` (unique).

    In a consumer's batch the postings are booked together at the batch's end
    (:func:`book_collections`, a few statements for the whole batch); elsewhere now.
    """
    pending: list[tuple[str, CollectionPosted]] | None = session.info.get(_PENDING)
    if pending is not None:  # a later event of the batch: booked with the first's
        pending.append((event_id, posting))
        return
    session.info[_PENDING] = [(event_id, posting)]
    await once_per_batch(
        session, _PENDING, lambda: book_collections(session, postings=session.info.pop(_PENDING), law=law)
    )


async def book_collections(
    session: AsyncSession, *, postings: Sequence[tuple[str, CollectionPosted]], law: ParameterTree
) -> int:
    """Book ``(event id, posting)`` pairs in order: one journal entry of two lines and one
    collection row each, in one statement; a posting already booked (or twice in
    ``postings``: the first wins) or of zero books nothing. Returns the entries booked.
    Every entry balances by construction; the ledger's triggers check it when the statement
    ends (a batch that fails there is applied again event by event, as any failed batch)."""
    rows = [(e, p) for e, p in postings if p.amount != 0]
    if not rows:
        return 0
    # looked up once per batch: the pending line's citation per jurisdiction and day, the
    # accounts per jurisdiction
    sections = {
        (j, on): accounts.section_text(j, "distribution.collection_section", on, law=law)
        for j, on in {(p.jurisdiction, p.collected_on) for _, p in rows}
    }
    return await repository.add_collections(
        session,
        rows,
        pending_sections=[sections[(p.jurisdiction, p.collected_on)] for _, p in rows],
        accounts={
            j: (accounts.cash(j), accounts.pending(j)) for j in sorted({p.jurisdiction for _, p in rows})
        },
    )


@dataclass(frozen=True, slots=True)
class AccountBalance:
    account: Account
    debit: Decimal
    credit: Decimal

    @property
    def balance(self) -> Decimal:
        """In the account's normal direction: debit for cash, credit for the others."""
        net = self.debit - self.credit
        return net if self.account.kind == "cash" else -net


async def balances(
    session: AsyncSession, *, jurisdiction: str | None, as_of: date | None
) -> list[AccountBalance]:
    rows = await repository.account_totals(session, jurisdiction=jurisdiction, as_of=as_of)
    return [AccountBalance(a, Decimal(d), Decimal(c)) for a, d, c in rows]


def total(items: list[AccountBalance], *kinds: str) -> Decimal:
    return sum((b.balance for b in items if b.account.kind in kinds), ZERO)
