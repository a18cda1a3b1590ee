"""The steps every case-work use-case takes, written once.

A case-work route loads the account facts, checks the role, proposes or records a
step, emits the step's event from the stored row, and reloads what it returns. The
domains (abatements, cases, refunds, write-offs, plans, audits, ...) say only what
differs: which row, which event, which role; these helpers do the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts
from assessment.casework import approvals, repository
from assessment.casework.events import event_id
from servicekit.auth import Principal
from servicekit.errors import NotFound
from servicekit.outbox import emit
from taxcore.events import EventData


class OfAccount(Protocol):
    tax_account: str


R = TypeVar("R")
A = TypeVar("A", bound=OfAccount)


async def visible(session: AsyncSession, principal: Principal, row: A | None, missing: str) -> A:
    """The row when the caller may see its account; none, or another's, is the same 404."""
    if row is None or not await repository.can_see(session, principal, row.tax_account):
        raise NotFound(missing)
    return row


async def visible_facts(
    session: AsyncSession, principal: Principal, row: OfAccount | None, missing: str
) -> Facts:
    """The facts of the row's account when the caller may see its lodging; else the same 404."""
    facts = await accounts_repo.load_facts(session, row.tax_account) if row is not None else None
    if facts is None or not accounts_repo.visible(principal, facts.lodging):
        raise NotFound(missing)
    return facts


async def locked_facts(session: AsyncSession, tax_account: str) -> Facts:
    """The account's facts under its row lock (the account exists: a row of it was found)."""
    await accounts_repo.lock_account(session, tax_account)
    return await facts_of(session, tax_account)


async def facts_of(session: AsyncSession, tax_account: str) -> Facts:
    """The facts of an account a case-work row belongs to (so the account exists)."""
    facts = await accounts_repo.load_facts(session, tax_account)
    assert facts is not None
    return facts


def require_staff(principal: Principal, what: str) -> None:
    """Agency staff work cases; read-only dashboards and taxpayers do not (403 saying they ``what``)."""
    approvals.require_agency_staff(principal, what)


async def staff_lock(session: AsyncSession, principal: Principal, tax_account: str, *, what: str) -> None:
    """Agency staff only (403 otherwise, saying they ``what``), then the account's row lock."""
    approvals.require_agency_staff(principal, what)
    await accounts_repo.lock_account(session, tax_account)


async def add_and_emit(
    session: AsyncSession,
    row: R,
    event: Callable[[R], EventData],
    *,
    key: str,
    event_key: Callable[[R], tuple[str, ...]],
) -> R:
    """Write ``row`` and, in the same transaction, the event built from it as stored.

    ``event_key`` names the row (``("abatement", row.id)``): the event id derives from it, so
    a retried write publishes nothing new.
    """
    session.add(row)
    await session.flush()
    await emit(session, event(row), key=key, event_id=event_id(*event_key(row)))
    return row
