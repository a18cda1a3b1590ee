"""People who sign in: accounts, their sign-in sessions, and every sign-in attempt.

Kept apart from ``registry.models`` (same metadata) so the people domain is one package.
``login_attempts`` and ``user_sessions`` are the audit trail of sign-ins: attempts are
append-only; a session row is only ever touched to record its use or its revocation.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from registry.models import Base
from servicekit.db import Created, new_id


class User(Created, Base):
    __tablename__ = "users"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(Text, unique=True)  # stored lower-cased
    name: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(Text)
    operator_id: Mapped[str | None] = mapped_column(ForeignKey("operators.id"), index=True)
    facilitator_id: Mapped[str | None] = mapped_column(ForeignKey("facilitators.id"), index=True)
    locale: Mapped[str] = mapped_column(Text, default="en")
    password_hash: Mapped[str] = mapped_column(Text)
    password_changed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(Text)
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    disabled_by: Mapped[str | None] = mapped_column(Text)


class UserSession(Created, Base):
    """One sign-in: the web app renews the person's access token with its refresh secret
    until the session expires or is revoked (sign-out, password change, account disabled)."""

    __tablename__ = "user_sessions"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    refresh_hash: Mapped[str] = mapped_column(Text)  # sha256 of the refresh secret
    ip: Mapped[str | None] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_reason: Mapped[str | None] = mapped_column(Text)


class LoginAttempt(Created, Base):
    """Every sign-in attempt, append-only: the throttle counts recent failures from it."""

    __tablename__ = "login_attempts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(Text)
    ip: Mapped[str | None] = mapped_column(Text)
    succeeded: Mapped[bool] = mapped_column(Boolean)
    outcome: Mapped[str] = mapped_column(
        Text
    )  # ok | wrong-password | unknown | disabled | throttled; OIDC: replayed, bound-to-another-subject
    __table_args__ = (
        Index("ix_login_attempts_email_created_at", "email", "created_at"),
        Index("ix_login_attempts_ip_created_at", "ip", "created_at"),
    )


class OidcIdentity(Created, Base):
    """A person at the agency's OpenID Connect provider, bound to a registry user at their first
    sign-in there (found then by the configured claim, the e-mail address) and from then on found
    by (``issuer``, ``subject``) alone: an address changed at the provider names nobody else."""

    __tablename__ = "oidc_identities"
    issuer: Mapped[str] = mapped_column(Text, primary_key=True)
    subject: Mapped[str] = mapped_column(Text, primary_key=True)  # the ID token's ``sub``
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    bound_by_claim: Mapped[str] = mapped_column(Text)  # the claim's value that found the user
    __table_args__ = (UniqueConstraint("issuer", "user_id", name="uq_oidc_identities_issuer_user_id"),)


class OidcUsedNonce(Created, Base):
    """The nonce of every ID token the registry accepted, kept until the token expires, so the
    same token presented again is refused (the web app's ``state`` stops a replayed callback;
    this stops a replayed token sent to the registry itself)."""

    __tablename__ = "oidc_used_nonces"
    issuer: Mapped[str] = mapped_column(Text, primary_key=True)
    nonce_hash: Mapped[str] = mapped_column(Text, primary_key=True)  # sha256 of the nonce
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
