"""Queries of the people domain."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from registry.users.models import LoginAttempt, OidcIdentity, OidcUsedNonce, User, UserSession


async def by_email(session: AsyncSession, email: str) -> User | None:
    return (await session.execute(select(User).where(User.email == email))).scalar_one_or_none()


async def listing(session: AsyncSession, *, limit: int, after: str | None) -> Sequence[User]:
    stmt = select(User).order_by(User.id).limit(limit + 1)
    if after:
        stmt = stmt.where(User.id > after)
    return (await session.execute(stmt)).scalars().all()


async def by_ids(session: AsyncSession, user_ids: Sequence[str]) -> Sequence[User]:
    stmt = select(User).where(User.id.in_(list(user_ids))).order_by(User.id)
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


async def use_nonce(
    session: AsyncSession, *, issuer: str, nonce_hash: str, expires_at: datetime, now: datetime
) -> bool:
    """Record an accepted ID token's nonce; False when it was recorded before (a replay). The
    primary key decides, so of two requests with the same token at once only one gets True.
    Nonces whose token has expired are deleted on the way (their token is refused anyway)."""
    await session.execute(delete(OidcUsedNonce).where(OidcUsedNonce.expires_at < now))
    first = await session.execute(
        insert(OidcUsedNonce)
        .values(issuer=issuer, nonce_hash=nonce_hash, expires_at=expires_at, created_at=now)
        .on_conflict_do_nothing()
        .returning(OidcUsedNonce.nonce_hash)
    )
    return first.scalar_one_or_none() is not None


async def oidc_identity(session: AsyncSession, *, issuer: str, subject: str) -> OidcIdentity | None:
    return await session.get(OidcIdentity, (issuer, subject))


async def oidc_identity_of(session: AsyncSession, *, issuer: str, user_id: str) -> OidcIdentity | None:
    """The provider's subject a user is bound to, if any."""
    found = await session.execute(
        select(OidcIdentity).where(OidcIdentity.issuer == issuer, OidcIdentity.user_id == user_id)
    )
    return found.scalar_one_or_none()


async def bind_oidc_identity(
    session: AsyncSession, *, issuer: str, subject: str, user_id: str, claim: str, now: datetime
) -> None:
    """Bind a provider's subject to a user (a concurrent first sign-in of either binds once)."""
    await session.execute(
        insert(OidcIdentity)
        .values(issuer=issuer, subject=subject, user_id=user_id, bound_by_claim=claim, created_at=now)
        .on_conflict_do_nothing()
    )
