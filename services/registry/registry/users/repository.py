"""Queries of the people domain."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from registry.users.models import LoginAttempt, User, UserSession


async def by_email(session: AsyncSession, email: str) -> User | None:
    return (await session.execute(select(User).where(User.email == email))).scalar_one_or_none()


async def listing(session: AsyncSession, *, limit: int, after: str | None) -> Sequence[User]:
    stmt = select(User).order_by(User.id).limit(limit + 1)
    if after:
        stmt = stmt.where(User.id > after)
    return (await session.execute(stmt)).scalars().all()


async def failures_since(
    session: AsyncSession, *, since: datetime, email: str | None = None, ip: str | None = None
) -> int:
    """Failed attempts since ``since`` for one account (after its last success) or one address."""
    stmt = (
        select(func.count())
        .select_from(LoginAttempt)
        .where(LoginAttempt.created_at >= since, LoginAttempt.outcome != "ok")
    )
    if email is not None:
        last_ok = (
            select(func.max(LoginAttempt.created_at))
            .where(LoginAttempt.email == email, LoginAttempt.outcome == "ok")
            .scalar_subquery()
        )
        stmt = stmt.where(
            LoginAttempt.email == email,
            LoginAttempt.created_at > func.coalesce(last_ok, since),
        )
    if ip is not None:
        stmt = stmt.where(LoginAttempt.ip == ip)
    return int((await session.execute(stmt)).scalar_one())


async def live_session(session: AsyncSession, session_id: str, now: datetime) -> UserSession | None:
    row = await session.get(UserSession, session_id, with_for_update=True)
    if row is None or row.revoked_at is not None or row.expires_at <= now:
        return None
    return row


async def revoke_all(session: AsyncSession, *, user_id: str, now: datetime, reason: str) -> Sequence[str]:
    """End every live session of the person; the ids of the sessions it ended."""
    ended = await session.execute(
        update(UserSession)
        .where(
            UserSession.user_id == user_id,
            UserSession.revoked_at.is_(None),
            UserSession.expires_at > now,
        )
        .values(revoked_at=now, revoked_reason=reason)
        .returning(UserSession.id)
    )
    return ended.scalars().all()
