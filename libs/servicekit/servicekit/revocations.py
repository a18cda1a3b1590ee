"""Revoked clients, people and sign-in sessions: every service refuses their tokens within seconds.

Access tokens are verified locally and live up to ``token_ttl_seconds``, so revoking
a client at the registry alone would leave its tokens working until they expire. The
registry therefore publishes ``roomtax.registry.access.revoked.v1``
(:class:`taxcore.events.registry.AccessRevoked`); each service's worker records it in
the service's own ``revoked_principals`` table (:func:`revocation_consumer`), and each
API process keeps a small in-memory :class:`Denylist`, keyed by client id, by user id
and by sign-in session id (a person's token carries its session as ``sid``), loaded
from that table at start and refreshed every ``revocation_refresh_seconds``.
:class:`servicekit.auth.TokenVerifier` refuses a token whose subject was revoked at or
after the token was issued (``iat``): a person whose access is restored later gets new
tokens that pass. An ended sign-in session (``kind="session"``: signed out, or ended by
a password change) is never renewed, so none of its tokens pass once the denylist knows
it, while the person's other sessions go on working.

Only revocations younger than the token lifetime (plus the verifier's leeway) matter,
since every older token has expired anyway: that is all the denylist loads, so it stays
small however many clients were ever revoked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import sqlalchemy as sa
from alembic import op
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from servicekit.auth import LEEWAY_SECONDS
from servicekit.consumer import EventConsumer, handles
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings
from taxcore.events import CloudEvent
from taxcore.events.registry import REVOCATIONS, AccessRevoked

log = logging.getLogger("servicekit.revocations")

EVENT_TYPE = AccessRevoked.event_type
TABLE = "revoked_principals"
KIND_CHECK = "ck_revoked_principals_kind"


def create_revocations_table() -> None:
    """The ``revoked_principals`` table (a service migration calls this once)."""
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        TABLE,
        sa.Column("kind", sa.Text, primary_key=True),
        sa.Column("subject_id", sa.Text, primary_key=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("event_id", sa.Text),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("kind IN ('client', 'user')", name=KIND_CHECK),
    )
    op.create_index("ix_revoked_principals_revoked_at", TABLE, ["revoked_at"])


def allow_session_revocations() -> None:
    """Let ``revoked_principals`` hold ended sign-in sessions (``kind = 'session'``)."""
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_constraint(KIND_CHECK, TABLE, type_="check")
    op.create_check_constraint(KIND_CHECK, TABLE, "kind IN ('client', 'user', 'session')")


def disallow_session_revocations() -> None:
    op.execute(f"DELETE FROM {TABLE} WHERE kind = 'session'")  # noqa: S608
    op.drop_constraint(KIND_CHECK, TABLE, type_="check")
    op.create_check_constraint(KIND_CHECK, TABLE, "kind IN ('client', 'user')")


def drop_revocations_table() -> None:
    op.drop_table(TABLE)


async def record_revocation(
    session: AsyncSession, revocation: AccessRevoked, *, event_id: str | None = None
) -> None:
    """Upsert one revocation; a later revocation of the same subject moves its time forward."""
    await session.execute(
        text(
            f"INSERT INTO {TABLE} (kind, subject_id, revoked_at, reason, event_id) "  # noqa: S608
            "VALUES (:k, :s, :r, :why, :e) ON CONFLICT (kind, subject_id) DO UPDATE SET "
            "revoked_at = GREATEST(EXCLUDED.revoked_at, revoked_principals.revoked_at), "
            "reason = EXCLUDED.reason, event_id = EXCLUDED.event_id, recorded_at = now()"
        ),
        {
            "k": revocation.kind,
            "s": revocation.subject_id,
            "r": revocation.revoked_at,
            "why": revocation.reason,
            "e": event_id,
        },
    )


@handles(AccessRevoked)
async def on_access_revoked(
    session: AsyncSession, revocation: AccessRevoked, event: CloudEvent, runtime: Runtime
) -> None:
    await record_revocation(session, revocation, event_id=event.id)


def revocation_consumer(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession], runtime: Runtime | None = None
) -> EventConsumer:
    """The consumer every service registers to record the registry's revocations."""
    return EventConsumer(
        name=f"{settings.service_name}-revocations",
        bootstrap=settings.kafka_bootstrap,
        topics=[REVOCATIONS],
        sessionmaker=sessionmaker,
        handlers=[on_access_revoked],
        runtime=runtime,
    )


class Denylist:
    """Who may not call any more, by client id, user id and sign-in session id:
    ``{(kind, id): revoked_at}``."""

    def __init__(self, *, token_ttl_seconds: int) -> None:
        self.horizon = token_ttl_seconds + LEEWAY_SECONDS
        self._revoked: dict[tuple[str, str], float] = {}
        self.loaded = False

    def replace(self, entries: dict[tuple[str, str], float]) -> None:
        self._revoked = entries
        self.loaded = True

    def refuses(
        self, *, client_id: str, user_id: str | None, issued_at: float, session_id: str | None = None
    ) -> str | None:
        """Why a token issued at ``issued_at`` (unix time) is refused, or None."""
        client = self._revoked.get(("client", client_id))
        if client is not None and issued_at <= client:
            return "the client's access has been revoked"
        if user_id is not None:
            user = self._revoked.get(("user", user_id))
            if user is not None and issued_at <= user:
                return "this person's access has been revoked"
        if session_id is not None:
            ended = self._revoked.get(("session", session_id))
            if ended is not None and issued_at <= ended:
                return "this sign-in session has ended: sign in again"
        return None

    async def load(self, engine: AsyncEngine) -> int:
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        f"SELECT kind, subject_id, revoked_at FROM {TABLE} "  # noqa: S608
                        "WHERE revoked_at > now() - make_interval(secs => :h)"
                    ),
                    {"h": self.horizon},
                )
            ).all()
        self.replace({(r.kind, r.subject_id): r.revoked_at.timestamp() for r in rows})
        return len(rows)

    async def watch(self, engine: AsyncEngine, stop: asyncio.Event, *, interval: float) -> None:
        """Reload every ``interval`` seconds until ``stop``; a database error is retried."""
        failing = False
        while not stop.is_set():
            try:
                await self.load(engine)
                if failing:
                    log.info("revocation denylist reloaded")
                failing = False
            except Exception as exc:  # noqa: BLE001 - the API keeps serving; retried
                if not failing:
                    log.warning("revocation denylist could not be loaded: %s; retrying", exc)
                failing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval)


__all__ = [
    "EVENT_TYPE",
    "AccessRevoked",
    "Denylist",
    "allow_session_revocations",
    "create_revocations_table",
    "disallow_session_revocations",
    "drop_revocations_table",
    "record_revocation",
    "revocation_consumer",
]
