"""Revoked clients and people are refused by every API within seconds (servicekit.revocations)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import httpx
from fastapi import FastAPI
from sqlalchemy import text

from servicekit import devkeys
from servicekit.auth import Principal, TokenIssuer
from servicekit.revocations import EVENT_TYPE, Denylist, record_revocation, revocation_consumer
from servicekit.testing import token
from taxcore.events import CloudEvent
from taxcore.events.registry import AccessRevoked

ISSUER = TokenIssuer(devkeys.DEV_PRIVATE_KEY, issuer="roomtax-registry", audience="roomtax", ttl_seconds=900)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


async def revoke(app: FastAPI, kind: str, subject_id: str, at: datetime) -> None:
    async with app.state.sessionmaker() as session, session.begin():
        await record_revocation(
            session,
            AccessRevoked(kind=kind, subject_id=subject_id, revoked_at=at, reason="test"),
        )


async def status_within(
    client: httpx.AsyncClient, headers: dict[str, str], want: int, seconds: float
) -> float:
    """Seconds until GET /v1/widgets answers ``want`` (fails after ``seconds``)."""
    start = time.monotonic()
    while True:
        r = await client.get("/v1/widgets", headers=headers)
        if r.status_code == want:
            return time.monotonic() - start
        assert time.monotonic() - start < seconds, (r.status_code, r.text)
        await asyncio.sleep(0.05)


class TestDenylist:
    def test_refuses_tokens_issued_up_to_the_revocation_by_client_and_by_user(self) -> None:
        deny = Denylist(token_ttl_seconds=900)
        deny.replace({("client", "c1"): 1000.0, ("user", "u1"): 2000.0})
        assert (
            deny.refuses(client_id="c1", user_id=None, issued_at=999)
            == "the client's access has been revoked"
        )
        assert (
            deny.refuses(client_id="c1", user_id=None, issued_at=1000)
            == "the client's access has been revoked"
        )
        assert deny.refuses(client_id="c1", user_id=None, issued_at=1001) is None
        assert (
            deny.refuses(client_id="web", user_id="u1", issued_at=1500)
            == "this person's access has been revoked"
        )
        assert deny.refuses(client_id="web", user_id="u1", issued_at=2001) is None
        assert deny.refuses(client_id="c2", user_id="u2", issued_at=0) is None
        assert deny.horizon == 905  # older revocations cannot match an unexpired token

    def test_an_ended_sign_in_session_is_refused_and_the_persons_other_sessions_are_not(self) -> None:
        deny = Denylist(token_ttl_seconds=900)
        deny.replace({("session", "s1"): 1000.0})
        assert (
            deny.refuses(client_id="person:u1", user_id="u1", session_id="s1", issued_at=1000)
            == "this sign-in session has ended: sign in again"
        )
        assert deny.refuses(client_id="person:u1", user_id="u1", session_id="s2", issued_at=1000) is None
        assert deny.refuses(client_id="person:u1", user_id="u1", issued_at=1000) is None


class TestRevokedTokensAreRefused:
    async def test_a_revoked_client_is_refused_within_seconds_and_others_are_not(
        self, client: httpx.AsyncClient, widget_app: FastAPI
    ) -> None:
        revoked, other = unique("client"), unique("client")
        old = bearer(token("agency-admin", client_id=revoked))
        assert (await client.get("/v1/widgets", headers=old)).status_code == 200
        await revoke(widget_app, "client", revoked, datetime.now(UTC))
        took = await status_within(client, old, 401, seconds=5)
        assert took < 3  # refreshed every revocation_refresh_seconds (1 s)
        r = await client.get("/v1/widgets", headers=old)
        assert r.json()["detail"] == "the client's access has been revoked"
        assert r.headers["content-type"] == "application/problem+json"
        assert (
            await client.get("/v1/widgets", headers=bearer(token("agency-admin", client_id=other)))
        ).status_code == 200

    async def test_a_revoked_person_is_refused_whichever_client_carries_the_token(
        self, client: httpx.AsyncClient, widget_app: FastAPI
    ) -> None:
        person = unique("user")
        via_web = bearer(token("agency-admin", client_id=unique("web"), user_id=person))
        via_other = bearer(token("dashboard", client_id=unique("web"), user_id=person))
        at = datetime.now(UTC)
        await revoke(widget_app, "user", person, at)
        await status_within(client, via_web, 401, seconds=5)
        r = await client.get("/v1/widgets", headers=via_other)
        assert (r.status_code, r.json()["detail"]) == (401, "this person's access has been revoked")
        # access restored later: tokens issued after the revocation pass
        later, _ = ISSUER.issue(
            Principal(client_id=unique("web"), role="dashboard", user_id=person), now=at.timestamp() + 2
        )
        assert (await client.get("/v1/widgets", headers=bearer(later))).status_code == 200

    async def test_an_ended_sign_in_session_is_refused_and_the_persons_other_session_works(
        self, client: httpx.AsyncClient, widget_app: FastAPI
    ) -> None:
        person, ended, live = unique("user"), unique("session"), unique("session")

        def of_session(sid: str) -> dict[str, str]:
            principal = Principal(
                client_id=f"person:{person}", role="dashboard", user_id=person, session_id=sid
            )
            return bearer(ISSUER.issue(principal)[0])

        signed_out, other = of_session(ended), of_session(live)
        assert (await client.get("/v1/widgets", headers=signed_out)).status_code == 200
        await revoke(widget_app, "session", ended, datetime.now(UTC))
        took = await status_within(client, signed_out, 401, seconds=5)
        assert took < 3
        r = await client.get("/v1/widgets", headers=signed_out)
        assert r.json()["detail"] == "this sign-in session has ended: sign in again"
        assert (await client.get("/v1/widgets", headers=other)).status_code == 200

    async def test_the_denylist_is_loaded_at_start(self, widget_app: FastAPI) -> None:
        person = unique("user")
        await revoke(widget_app, "user", person, datetime.now(UTC))
        fresh = Denylist(token_ttl_seconds=900)
        assert await fresh.load(widget_app.state.engine) >= 1
        assert fresh.refuses(client_id="x", user_id=person, issued_at=time.time() - 1) is not None


class TestRevocationConsumer:
    async def test_records_the_event_once(self, widget_app: FastAPI) -> None:
        settings = widget_app.state.settings
        consumer = revocation_consumer(settings, widget_app.state.sessionmaker)
        assert (consumer.name, consumer.topics) == ("widgets-revocations", ["registry.revocations"])
        subject = unique("client")
        at = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
        event = CloudEvent(
            id=unique("evt"),
            source="/roomtax/registry",
            type=EVENT_TYPE,
            subject=subject,
            time=at,
            data=AccessRevoked(kind="client", subject_id=subject, revoked_at=at).model_dump(mode="json"),
        )
        handler = consumer.handlers[EVENT_TYPE]
        assert await consumer.apply(event, handler) == "applied"
        assert await consumer.apply(event, handler) == "duplicate"
        async with widget_app.state.sessionmaker() as session:
            rows = (
                await session.execute(
                    text("SELECT kind, revoked_at, event_id FROM revoked_principals WHERE subject_id = :s"),
                    {"s": subject},
                )
            ).all()
        assert [tuple(r) for r in rows] == [("client", at, event.id)]
