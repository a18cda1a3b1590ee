"""Every query over the ``emails`` table (the mail sender's outbox)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from notify.models import Email, Lodging
from servicekit.db import new_id


async def add(session: AsyncSession, values: dict[str, Any]) -> bool:
    """Queue a message once per ``message_key``; False when it was already queued."""
    stmt = (
        insert(Email).values(id=new_id(), attempts=0, **values).on_conflict_do_nothing().returning(Email.id)
    )
    return (await session.execute(stmt)).first() is not None


async def cancel_pending(session: AsyncSession, *, kind: str, tax_account: str, period: str) -> int:
    stmt = (
        update(Email)
        .where(
            Email.kind == kind,
            Email.tax_account == tax_account,
            Email.period == period,
            Email.status == "pending",
        )
        .values(status="cancelled")
    )
    return int((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


async def keys_with_prefix(session: AsyncSession, prefix: str) -> set[str]:
    stmt = select(Email.message_key).where(Email.message_key.startswith(prefix))
    return set((await session.execute(stmt)).scalars().all())


async def listed(
    session: AsyncSession, recipient: tuple[str, str] | None, *, limit: int, after: tuple[str, str] | None
) -> Sequence[Email]:
    stmt = select(Email)
    if recipient is not None:
        stmt = stmt.where(Email.recipient_kind == recipient[0], Email.recipient_id == recipient[1])
    if after is not None:
        at = datetime.fromisoformat(after[0])
        stmt = stmt.where(or_(Email.created_at < at, and_(Email.created_at == at, Email.id < after[1])))
    stmt = stmt.order_by(Email.created_at.desc(), Email.id.desc()).limit(limit + 1)
    return (await session.execute(stmt)).scalars().all()


async def claim_due(session: AsyncSession, *, limit: int, lease_seconds: float) -> Sequence[Email]:
    stmt = (
        select(Email)
        .where(Email.status == "pending", Email.next_attempt_at <= func.clock_timestamp())
        .order_by(Email.next_attempt_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    rows = (await session.execute(stmt)).scalars().all()
    if rows:
        await session.execute(
            update(Email)
            .where(Email.id.in_([r.id for r in rows]))
            .values(
                next_attempt_at=func.clock_timestamp() + func.make_interval(0, 0, 0, 0, 0, 0, lease_seconds)
            )
        )
    return rows


async def operator_language_hint(session: AsyncSession, operator_id: str) -> tuple[str | None, str | None]:
    """(jurisdiction, preferred language) of an operator's first lodging, for party-wide notices."""
    stmt = (
        select(Lodging.jurisdiction, Lodging.language)
        .where(Lodging.operator_id == operator_id)
        .order_by(Lodging.registered_on, Lodging.tax_account)
        .limit(1)
    )
    row = (await session.execute(stmt)).first()
    return (row[0], row[1]) if row else (None, None)
