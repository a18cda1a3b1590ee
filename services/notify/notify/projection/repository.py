"""Queries over notify's registry projection (lodgings, parties, authorizations, filings)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from notify.models import Authorization, Filing, Lodging, Party, Payment


async def lodging_by_account(session: AsyncSession, tax_account: str) -> Lodging | None:
    return (
        await session.execute(select(Lodging).where(Lodging.tax_account == tax_account))
    ).scalar_one_or_none()


async def party(session: AsyncSession, kind: str, party_id: str) -> Party | None:
    return await session.get(Party, (kind, party_id))


async def record_filing(
    session: AsyncSession, *, tax_account: str, period: str, filer_kind: str, filed_on: date
) -> None:
    stmt = insert(Filing).values(
        tax_account=tax_account, period=period, filer_kind=filer_kind, filed_on=filed_on
    )
    await session.execute(stmt.on_conflict_do_nothing())


async def filer_kinds(session: AsyncSession, *, tax_account: str, period: str) -> set[str]:
    stmt = select(Filing.filer_kind).where(Filing.tax_account == tax_account, Filing.period == period)
    return set((await session.execute(stmt)).scalars().all())


async def filed_periods(session: AsyncSession, periods: Sequence[str]) -> dict[tuple[str, str], set[str]]:
    """(tax account, period) -> filer kinds, for every filing of the given periods."""
    stmt = select(Filing.tax_account, Filing.period, Filing.filer_kind).where(
        Filing.period.in_(list(periods))
    )
    out: dict[tuple[str, str], set[str]] = {}
    for account, period, kind in (await session.execute(stmt)).all():
        out.setdefault((account, period), set()).add(kind)
    return out


async def all_lodgings(session: AsyncSession) -> Sequence[Lodging]:
    return (await session.execute(select(Lodging).order_by(Lodging.tax_account))).scalars().all()


async def record_payment(session: AsyncSession, values: dict[str, Any]) -> None:
    await session.execute(insert(Payment).values(**values).on_conflict_do_nothing())


async def payment(session: AsyncSession, payment_id: str) -> Payment | None:
    return await session.get(Payment, payment_id)


async def authorization(session: AsyncSession, authorization_id: str) -> Authorization | None:
    return await session.get(Authorization, authorization_id)
