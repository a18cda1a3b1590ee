"""Access use-cases: revoking a client (or a person) everywhere at once."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.outbox import emit
from servicekit.revocations import EVENT_TYPE, record_revocation
from taxcore.events.registry import AccessRevoked


async def revoke_access(
    session: AsyncSession,
    *,
    kind: Literal["client", "user"],
    subject_id: str,
    revoked_at: datetime,
    reason: str | None = None,
) -> AccessRevoked:
    """Refuse every token issued to a client or person until now, in every service.

    The registry records the revocation in its own denylist table (its API refuses the
    tokens at its next refresh) and publishes ``AccessRevoked`` in the same transaction;
    every other service's worker records it in its table, and its API's denylist picks
    it up within ``revocation_refresh_seconds``. Users (``kind="user"``) go the same way.
    """
    revocation = AccessRevoked(kind=kind, subject_id=subject_id, revoked_at=revoked_at, reason=reason)
    event_id = await emit(session, event_type=EVENT_TYPE, key=subject_id, data=revocation)
    await record_revocation(session, revocation, event_id=event_id)
    return revocation
