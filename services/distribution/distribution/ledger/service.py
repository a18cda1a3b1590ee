"""Ledger use-cases: book a collection (from ``collection.posted``), read balances."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from distribution.ledger import accounts, repository
from distribution.ledger.repository import Line
from distribution.models import Account, Collection
from taxcore.events.assessment import CollectionPosted
from taxcore.money import ZERO


async def record_collection(
    session: AsyncSession, *, event_id: str, posting: CollectionPosted
) -> Collection | None:
    """Debit cash, credit the jurisdiction's collections pending distribution.

    A negative amount (assessment re-applied a payment, or a paid refund took
    money the funds had received: ``refund_id``) books the opposite entry: cash
    leaves, and the next run nets it with the other collections, so the funds
    give their shares back by the same rule that gave them. Idempotent on the
    event id (inbox) and on ``posting_id`` (unique).
    """
    known = await session.execute(select(Collection).where(Collection.posting_id == posting.posting_id))
    if (existing := known.scalar_one_or_none()) is not None:
        return existing
    if posting.amount == 0:
        return None
    j = posting.jurisdiction
    amount = posting.amount
    entry = await repository.add_entry(
        session,
        jurisdiction=j,
        kind="collection",
        effective_on=posting.collected_on,
        description=(
            f"collection {posting.posting_id} of payment {posting.payment_id}: {posting.component} "
            f"{amount} for {posting.tax_account} {posting.period}"
            + (f" (give-back of refund {posting.refund_id})" if posting.refund_id else "")
        ),
        event_id=event_id,
        lines=[
            Line(accounts.cash(j), amount, "collection.posted", posting.section),
            Line(
                accounts.pending(j),
                -amount,
                "collection.posted",
                accounts.section_text(j, "distribution.collection_section", posting.collected_on),
            ),
        ],
    )
    collection = Collection(
        posting_id=posting.posting_id,
        event_id=event_id,
        payment_id=posting.payment_id,
        tax_account=posting.tax_account,
        jurisdiction=j,
        lodging_class=posting.lodging_class,
        period=posting.period,
        component=posting.component,
        amount=amount,
        collected_on=posting.collected_on,
        section=posting.section,
        entry_id=entry.id,
    )
    session.add(collection)
    await session.flush()
    return collection


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
