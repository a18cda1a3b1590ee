"""Use-cases of the people domain: accounts, sign-in with throttling, sessions, passwords.

A person's access token is the platform's ordinary short-lived JWT (same issuer, keys
and roles as an OAuth client's) with ``user_id`` set, so every service authorizes a
person exactly as it authorizes a client of the same role and party, and records the
person as the actor of every write.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import Facilitator, Operator
from registry.oauth.service import revoke_access
from registry.settings import RegistrySettings
from registry.users import repository
from registry.users.models import LoginAttempt, User, UserSession
from registry.users.oidc import ExternalIdentity
from registry.users.passwords import digest, hash_password, needs_rehash, new_refresh_secret, verify_password
from registry.users.schemas import AccessOut, SessionOut, UserCreate, UserOut
from servicekit.auth import Principal, TokenIssuer
from servicekit.errors import Conflict, DomainError, NotFound, Unauthorized, ValidationFailed
from servicekit.outbox import emit
from taxcore.events import registry as ev


class TooManyAttempts(DomainError):
    status, slug, title = 429, "too-many-sign-in-attempts", "Too many sign-in attempts"


class NoAccount(DomainError):
    """The identity provider vouched for a person the registry has no (live) account for."""

    status, slug, title = 403, "no-account-for-this-person", "No account for this person"


class IdTokenUsed(DomainError):
    """An ID token presented a second time (its nonce was used): a replay, never a sign-in."""

    status, slug, title = 401, "id-token-already-used", "ID token already used"


WRONG = "unknown e-mail address or wrong password"


def to_out(u: User) -> UserOut:
    return UserOut.model_validate(u, from_attributes=True)


def principal_of(user: User, session_id: str) -> Principal:
    """The token's subject is per person, so idempotency keys and audit trails never mix people;
    its ``sid`` is the sign-in session, which signing out ends in every service."""
    return Principal(
        client_id=f"person:{user.id}",
        role=user.role,
        operator_id=user.operator_id,
        facilitator_id=user.facilitator_id,
        user_id=user.id,
        session_id=session_id,
    )


async def end_sessions(
    session: AsyncSession, *, session_ids: Sequence[str], now: datetime, reason: str
) -> None:
    """Every service refuses the access tokens of these sign-in sessions within seconds."""
    for session_id in session_ids:
        await revoke_access(session, kind="session", subject_id=session_id, revoked_at=now, reason=reason)


async def _changed(session: AsyncSession, user: User, change: str, by: str) -> None:
    await emit(
        session,
        ev.UserChanged(
            user_id=user.id,
            role=user.role,
            operator_id=user.operator_id,
            facilitator_id=user.facilitator_id,
            change=change,
            by=by,
        ),
        key=user.id,
    )


async def create_user(session: AsyncSession, *, body: UserCreate, by: str) -> User:
    if body.operator_id is not None and await session.get(Operator, body.operator_id) is None:
        raise ValidationFailed.on("operator_id", "no operator with this id")
    if body.facilitator_id is not None and await session.get(Facilitator, body.facilitator_id) is None:
        raise ValidationFailed.on("facilitator_id", "no facilitator with this id")
    if await repository.by_email(session, body.email) is not None:
        raise Conflict(
            "a user with this e-mail address exists",
            errors=[{"pointer": "#/body/email", "detail": "duplicate"}],
        )
    user = User(
        email=body.email,
        name=body.name,
        role=body.role,
        operator_id=body.operator_id,
        facilitator_id=body.facilitator_id,
        locale=body.locale,
        password_hash=hash_password(body.password),
        created_by=by,
    )
    session.add(user)
    await session.flush()
    await session.refresh(user)
    await _changed(session, user, "created", by)
    return user


async def get_user(session: AsyncSession, *, user_id: str) -> User:
    user = await session.get(User, user_id)
    if user is None:
        raise NotFound(f"no user {user_id!r}")
    return user


async def disable_user(session: AsyncSession, *, user_id: str, by: str, now: datetime) -> User:
    user = await get_user(session, user_id=user_id)
    if user.disabled_at is not None:
        raise Conflict("the user is already disabled")
    user.disabled_at, user.disabled_by = now, by
    await repository.revoke_all(session, user_id=user.id, now=now, reason="disabled")
    # the person's access tokens stop working in every service within seconds, not at expiry
    await revoke_access(session, kind="user", subject_id=user.id, revoked_at=now, reason="disabled")
    await session.flush()
    await _changed(session, user, "disabled", by)
    return user


@dataclass(frozen=True, slots=True)
class Throttle:
    window: timedelta
    per_account: int
    per_ip: int

    @classmethod
    def of(cls, settings: RegistrySettings) -> Throttle:
        return cls(
            window=timedelta(seconds=settings.login_window_seconds),
            per_account=settings.login_max_failures_per_account,
            per_ip=settings.login_max_failures_per_ip,
        )


async def _open_session(
    session: AsyncSession, user: User, *, issuer: TokenIssuer, ip: str | None, now: datetime, hours: int
) -> SessionOut:
    secret = new_refresh_secret()
    row = UserSession(
        id=secrets.token_hex(16),
        user_id=user.id,
        refresh_hash=digest(secret),
        ip=ip,
        expires_at=now + timedelta(hours=hours),
        last_used_at=now,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    access, ttl = issuer.issue(principal_of(user, row.id), now=now.timestamp())
    return SessionOut(
        access_token=access,
        expires_in=ttl,
        refresh_token=f"{row.id}.{secret}",
        session_id=row.id,
        session_expires_at=row.expires_at,
        user=to_out(user),
    )


async def sign_in(
    session: AsyncSession,
    *,
    email: str,
    password: str,
    ip: str | None,
    issuer: TokenIssuer,
    throttle: Throttle,
    session_hours: int,
    now: datetime,
) -> SessionOut | DomainError:
    """Check the password unless the account or the address is throttled; record the attempt.

    Returns the refusal instead of raising it, so the caller commits the attempt row before
    answering (a raised error would roll it back and the throttle would never count).
    """
    email = email.strip().lower()
    since = now - throttle.window
    outcome: str
    result: SessionOut | DomainError
    minutes = int(throttle.window.total_seconds() // 60)
    if await repository.failures_since(session, since=since, email=email) >= throttle.per_account or (
        ip is not None and await repository.failures_since(session, since=since, ip=ip) >= throttle.per_ip
    ):
        outcome = "throttled"
        result = TooManyAttempts(f"too many failed sign-in attempts: wait up to {minutes} minutes")
    else:
        user = await repository.by_email(session, email)
        if not verify_password(password, user.password_hash if user else None) or user is None:
            outcome, result = ("unknown" if user is None else "wrong-password"), Unauthorized(WRONG)
        elif user.disabled_at is not None:
            outcome, result = "disabled", Unauthorized(WRONG)
        else:
            if needs_rehash(user.password_hash):
                user.password_hash = hash_password(password)
            outcome = "ok"
            result = await _open_session(session, user, issuer=issuer, ip=ip, now=now, hours=session_hours)
    session.add(LoginAttempt(email=email, ip=ip, succeeded=outcome == "ok", outcome=outcome, created_at=now))
    await session.flush()
    return result


async def _external_user(session: AsyncSession, who: ExternalIdentity) -> tuple[User | None, str, bool]:
    """The user a provider's person is: by (issuer, sub) once bound; before that by the claim,
    unless that user is bound to another subject of the provider. With the outcome's name and
    whether the binding is new."""
    bound = await repository.oidc_identity(session, issuer=who.issuer, subject=who.subject)
    if bound is not None:
        return await session.get(User, bound.user_id), "ok", False
    user = await repository.by_email(session, who.email) if who.email else None
    if user is None:
        return None, "unknown", False
    if await repository.oidc_identity_of(session, issuer=who.issuer, user_id=user.id) is not None:
        return None, "bound-to-another-subject", False
    return user, "ok", True


async def sign_in_external(
    session: AsyncSession,
    *,
    who: ExternalIdentity,
    ip: str | None,
    issuer: TokenIssuer,
    session_hours: int,
    now: datetime,
) -> SessionOut | DomainError:
    """A person the identity provider vouched for gets a session like a password sign-in;
    nobody is created. The token's nonce is used up first, so the same ID token never signs
    in twice. The first sign-in binds the user found by the claim to the provider's ``sub``;
    later ones find the user by ``sub`` alone. The attempt is recorded."""
    result: SessionOut | DomainError
    nobody = NoAccount("no Roomtax account for this person: ask the agency")
    if not await repository.use_nonce(
        session, issuer=who.issuer, nonce_hash=digest(who.nonce), expires_at=who.valid_until, now=now
    ):
        outcome, result = "replayed", IdTokenUsed("this ID token was already used: sign in again")
    else:
        user, outcome, new = await _external_user(session, who)
        if user is None:
            result = nobody
        elif user.disabled_at is not None:
            outcome, result = "disabled", nobody
        else:
            if new:
                await repository.bind_oidc_identity(
                    session,
                    issuer=who.issuer,
                    subject=who.subject,
                    user_id=user.id,
                    claim=who.email or "",
                    now=now,
                )
            result = await _open_session(session, user, issuer=issuer, ip=ip, now=now, hours=session_hours)
    session.add(
        LoginAttempt(email=who.email or "", ip=ip, succeeded=outcome == "ok", outcome=outcome, created_at=now)
    )
    await session.flush()
    return result


async def refresh(
    session: AsyncSession, *, refresh_token: str, issuer: TokenIssuer, now: datetime
) -> AccessOut:
    """A new access token for a live session; sign-out, a password change or a disabled
    account ends the session, so the next renewal fails."""
    session_id, _, secret = refresh_token.partition(".")
    row = await repository.live_session(session, session_id, now)
    if row is None or not secrets.compare_digest(row.refresh_hash, digest(secret)):
        raise Unauthorized("the session has ended: sign in again")
    user = await get_user(session, user_id=row.user_id)
    if user.disabled_at is not None:
        raise Unauthorized("the session has ended: sign in again")
    row.last_used_at = now
    access, ttl = issuer.issue(principal_of(user, row.id), now=now.timestamp())
    return AccessOut(access_token=access, expires_in=ttl)


async def sign_out(session: AsyncSession, *, refresh_token: str, now: datetime) -> None:
    """End the session (recorded with its time and reason): its refresh token stops working at
    once and every service refuses its access tokens within seconds; the person's other
    sessions go on. Unknown or ended: nothing to do."""
    session_id, _, secret = refresh_token.partition(".")
    row = await repository.live_session(session, session_id, now)
    if row is not None and secrets.compare_digest(row.refresh_hash, digest(secret)):
        row.revoked_at, row.revoked_reason = now, "signed-out"
        await end_sessions(session, session_ids=[row.id], now=now, reason="signed-out")


async def change_password(
    session: AsyncSession,
    *,
    user_id: str,
    current: str,
    new: str,
    ip: str | None,
    issuer: TokenIssuer,
    session_hours: int,
    now: datetime,
) -> SessionOut | DomainError:
    """Every session ends (in every service, within seconds); the caller gets a fresh one
    (a new session id)."""
    user = await get_user(session, user_id=user_id)
    if user.disabled_at is not None:
        return Unauthorized("the account is disabled")
    if not verify_password(current, user.password_hash):
        session.add(
            LoginAttempt(email=user.email, ip=ip, succeeded=False, outcome="wrong-password", created_at=now)
        )
        await session.flush()
        return ValidationFailed.on("current_password", "is not your current password")
    if new == current:
        return ValidationFailed.on("new_password", "must differ from the current password")
    user.password_hash = hash_password(new)
    user.password_changed_at = now
    ended = await repository.revoke_all(session, user_id=user.id, now=now, reason="password-changed")
    await end_sessions(session, session_ids=ended, now=now, reason="password-changed")
    await _changed(session, user, "password_changed", f"user:{user.id}")
    return await _open_session(session, user, issuer=issuer, ip=ip, now=now, hours=session_hours)
