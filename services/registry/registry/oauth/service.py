"""Access use-cases: API clients (created, authenticated, rotated, revoked) and revoking a client
(or a person) everywhere at once."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import OAuthClient
from registry.oauth import repository
from registry.oauth.schemas import ClientCreate
from registry.oauth.secrets import hash_secret, new_secret, verify_secret
from registry.parties import repository as parties
from servicekit.auth import Principal
from servicekit.errors import Conflict, NotFound, Unauthorized, ValidationFailed
from servicekit.outbox import emit
from servicekit.revocations import record_revocation
from taxcore.events import registry as ev
from taxcore.events.registry import AccessRevoked


async def revoke_access(
    session: AsyncSession,
    *,
    kind: Literal["client", "user", "session"],
    subject_id: str,
    revoked_at: datetime,
    reason: str | None = None,
) -> AccessRevoked:
    """Refuse every token issued to a client or person until now, in every service.

    The registry records the revocation in its own denylist table (its API refuses the
    tokens at its next refresh) and publishes ``AccessRevoked`` in the same transaction;
    every other service's worker records it in its table, and its API's denylist picks
    it up within ``revocation_refresh_seconds``. Users (``kind="user"``) and a person's
    sign-in sessions (``kind="session"``, the tokens' ``sid``) go the same way.
    """
    revocation = AccessRevoked(kind=kind, subject_id=subject_id, revoked_at=revoked_at, reason=reason)
    event_id = await emit(session, revocation, key=subject_id)
    await record_revocation(session, revocation, event_id=event_id)
    return revocation


async def authenticate(session: AsyncSession, *, client_id: str, secret: str) -> Principal:
    """The principal of a live client whose secret matches; otherwise Unauthorized."""
    client = await repository.client(session, client_id)
    if client is None or client.revoked_at is not None or not verify_secret(secret, client.secret_hash):
        raise Unauthorized("unknown client, wrong secret, or revoked client")
    return Principal(
        client_id=client.client_id,
        role=client.role,
        operator_id=client.operator_id,
        facilitator_id=client.facilitator_id,
    )


async def _event(session: AsyncSession, client: OAuthClient, change: str) -> None:
    await emit(
        session,
        ev.ClientChanged(
            client_id=client.client_id,
            role=client.role,
            operator_id=client.operator_id,
            facilitator_id=client.facilitator_id,
            change=change,
        ),
        key=client.client_id,
    )


async def create_client(
    session: AsyncSession, *, body: ClientCreate, client_id: str | None = None, secret: str | None = None
) -> tuple[OAuthClient, str]:
    if body.operator_id is not None and await parties.operator(session, body.operator_id) is None:
        raise ValidationFailed.on("operator_id", "no operator with this id")
    if body.facilitator_id is not None and await parties.facilitator(session, body.facilitator_id) is None:
        raise ValidationFailed.on("facilitator_id", "no facilitator with this id")
    if await repository.name_taken(session, body.name):
        raise Conflict(
            f"a client named {body.name!r} exists", errors=[{"pointer": "#/body/name", "detail": "duplicate"}]
        )
    secret = secret or new_secret()
    client = OAuthClient(
        client_id=client_id or "rtx_" + secrets.token_hex(8),
        name=body.name,
        secret_hash=hash_secret(secret),
        role=body.role,
        operator_id=body.operator_id,
        facilitator_id=body.facilitator_id,
    )
    session.add(client)
    await session.flush()
    await session.refresh(client)
    await _event(session, client, "created")
    return client, secret


async def _live_client(session: AsyncSession, client_id: str) -> OAuthClient:
    client = await repository.client(session, client_id)
    if client is None:
        raise NotFound(f"no client {client_id!r}")
    if client.revoked_at is not None:
        raise Conflict("the client is revoked")
    return client


async def rotate_client(session: AsyncSession, *, client_id: str, now: datetime) -> tuple[OAuthClient, str]:
    """A new secret for a live client (the old one stops working at once)."""
    client = await _live_client(session, client_id)
    secret = new_secret()
    client.secret_hash = hash_secret(secret)
    client.rotated_at = now
    await session.flush()
    await _event(session, client, "rotated")
    return client, secret


async def revoke_client(session: AsyncSession, *, client_id: str, by: str, now: datetime) -> OAuthClient:
    """Revoke a live client and refuse its tokens everywhere (``revoke_access``)."""
    client = await _live_client(session, client_id)
    client.revoked_at = now
    await session.flush()
    await _event(session, client, "revoked")
    await revoke_access(
        session,
        kind="client",
        subject_id=client.client_id,
        revoked_at=client.revoked_at,
        reason=f"client revoked by {by}",
    )
    return client
