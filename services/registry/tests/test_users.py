"""People: accounts, sign-in with throttling, sessions, sign-out, password change."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from registry_factories import ADMIN, make_facilitator, make_operator, outbox_types, scalar
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request

from registry.users.endpoints import client_ip
from servicekit import devkeys
from servicekit.auth import TokenVerifier
from servicekit.testing import auth

PASSWORD = "correct horse battery"
VERIFIER = TokenVerifier(devkeys.DEV_PUBLIC_KEY, issuer="roomtax-registry", audience="roomtax")


def email() -> str:
    return f"p-{uuid.uuid4().hex[:8]}@example.pr"


async def make_user(client: httpx.AsyncClient, role: str = "agency-auditor", **body: Any) -> dict[str, Any]:
    payload = {"email": email(), "name": "Ana Rivera", "role": role, "password": PASSWORD, **body}
    r = await client.post("/v1/people/users", json=payload, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def sign_in(
    client: httpx.AsyncClient, address: str, password: str = PASSWORD, **kw: Any
) -> httpx.Response:
    return await client.post("/v1/people/token", json={"email": address, "password": password}, **kw)


class TestCreateUser:
    async def test_admin_creates_an_operator_user_bound_to_its_operator(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        op = await make_operator(client)
        user = await make_user(client, "operator", operator_id=op["id"], email="Ana@Example.PR", locale="es")
        assert (user["email"], user["role"], user["operator_id"], user["locale"]) == (
            "ana@example.pr",
            "operator",
            op["id"],
            "es",
        )
        assert user["created_by"] == "client:test-agency-admin-None"
        assert {"password", "password_hash"}.isdisjoint(user)
        assert await outbox_types(db, user["id"]) == ["roomtax.registry.user.changed.v1"]
        stored = await scalar(db, "SELECT password_hash FROM users WHERE id = :i", i=user["id"])
        assert stored.startswith("$argon2id$")

    async def test_duplicate_email_is_a_conflict_on_the_field(self, client: httpx.AsyncClient) -> None:
        user = await make_user(client)
        r = await client.post(
            "/v1/people/users",
            json={"email": user["email"].upper(), "name": "X", "role": "dashboard", "password": PASSWORD},
            headers=ADMIN,
        )
        assert (r.status_code, r.json()["errors"]) == (
            409,
            [{"pointer": "#/body/email", "detail": "duplicate"}],
        )

    @pytest.mark.parametrize(
        ("body", "pointer"),
        [
            ({"role": "operator"}, "#/body"),
            ({"role": "agency-admin", "operator_id": "x"}, "#/body"),
            ({"role": "dashboard", "password": "short"}, "#/body/password"),
            ({"role": "dashboard", "email": "not-an-email"}, "#/body/email"),
            ({"role": "operator", "operator_id": "no-such-operator"}, "#/body/operator_id"),
        ],
    )
    async def test_bad_input_names_the_field(
        self, client: httpx.AsyncClient, body: dict[str, str], pointer: str
    ) -> None:
        payload = {"email": email(), "name": "X", "password": PASSWORD, **body}
        r = await client.post("/v1/people/users", json=payload, headers=ADMIN)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["errors"][0]["pointer"] == pointer


class TestSignIn:
    async def test_a_person_gets_a_token_naming_them_and_their_party(self, client: httpx.AsyncClient) -> None:
        fac = await make_facilitator(client)
        user = await make_user(client, "facilitator", facilitator_id=fac["id"])
        r = await sign_in(client, user["email"].upper())
        assert r.status_code == 200, r.text
        body = r.json()
        principal = VERIFIER.verify(body["access_token"])
        assert (principal.client_id, principal.role, principal.facilitator_id, principal.user_id) == (
            f"person:{user['id']}",
            "facilitator",
            fac["id"],
            user["id"],
        )
        assert principal.actor == f"user:{user['id']}"
        assert body["refresh_token"].startswith(body["session_id"] + ".")
        assert (body["expires_in"], body["user"]["id"]) == (900, user["id"])

    async def test_wrong_password_and_unknown_email_get_the_same_answer_and_are_recorded(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        user = await make_user(client)
        wrong = await sign_in(client, user["email"], "not the password")
        unknown = await sign_in(client, email())
        assert (wrong.status_code, unknown.status_code) == (401, 401)
        assert wrong.json()["detail"] == unknown.json()["detail"]
        assert wrong.headers["content-type"] == "application/problem+json"
        outcomes = await scalar(
            db,
            "SELECT string_agg(outcome, ',' ORDER BY id) FROM login_attempts WHERE email = :e",
            e=user["email"],
        )
        assert outcomes == "wrong-password"

    async def test_five_failures_lock_the_account_even_for_the_right_password(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        user = await make_user(client)
        for _ in range(5):
            assert (await sign_in(client, user["email"], "guess guess guess")).status_code == 401
        locked = await sign_in(client, user["email"])
        assert locked.status_code == 429
        assert locked.json()["type"] == "https://roomtax.dev/problems/too-many-sign-in-attempts"
        assert "access_token" not in locked.text
        outcomes = await scalar(
            db,
            "SELECT string_agg(outcome, ',' ORDER BY id) FROM login_attempts WHERE email = :e",
            e=user["email"],
        )
        assert outcomes == ",".join(["wrong-password"] * 5 + ["throttled"])

    async def test_a_success_resets_the_account_count(self, client: httpx.AsyncClient) -> None:
        user = await make_user(client)
        for _ in range(4):
            await sign_in(client, user["email"], "guess guess guess")
        assert (await sign_in(client, user["email"])).status_code == 200
        for _ in range(4):
            await sign_in(client, user["email"], "guess guess guess")
        assert (await sign_in(client, user["email"])).status_code == 200

    async def test_one_address_failing_on_many_accounts_is_throttled(
        self, client: httpx.AsyncClient, service_app: FastAPI, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(service_app.state.settings, "login_max_failures_per_ip", 3)
        user = await make_user(client)
        attacker = {"X-Forwarded-For": "203.0.113.7"}
        for _ in range(3):
            assert (await sign_in(client, email(), headers=attacker)).status_code == 401
        assert (await sign_in(client, user["email"], headers=attacker)).status_code == 429
        other = {"X-Forwarded-For": "198.51.100.9"}
        assert (await sign_in(client, user["email"], headers=other)).status_code == 200

    async def test_a_disabled_account_cannot_sign_in(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        user = await make_user(client)
        session = (await sign_in(client, user["email"])).json()
        r = await client.post(f"/v1/people/users/{user['id']}/disable", headers=ADMIN)
        assert (r.status_code, r.json()["disabled_by"]) == (200, "client:test-agency-admin-None")
        assert (await sign_in(client, user["email"])).status_code == 401
        renew = await client.post(
            "/v1/people/token/refresh", json={"refresh_token": session["refresh_token"]}
        )
        assert renew.status_code == 401
        # the person's live access tokens are refused everywhere within seconds (denylist event)
        assert await outbox_types(db, user["id"]) == [
            "roomtax.registry.user.changed.v1",
            "roomtax.registry.access.revoked.v1",
            "roomtax.registry.user.changed.v1",
        ]
        revoked = await scalar(
            db, "SELECT reason FROM revoked_principals WHERE kind = 'user' AND subject_id = :i", i=user["id"]
        )
        assert revoked == "disabled"
        again = await client.post(f"/v1/people/users/{user['id']}/disable", headers=ADMIN)
        assert again.status_code == 409


class TestClientAddress:
    @staticmethod
    def request(peer: str, forwarded: str | None, service_app: FastAPI) -> Request:
        headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
        return Request({"type": "http", "client": (peer, 1), "headers": headers, "app": service_app})

    def test_forwarded_for_is_believed_only_from_a_trusted_proxy(self, service_app: FastAPI) -> None:
        assert client_ip(self.request("127.0.0.1", "203.0.113.7", service_app)) == "203.0.113.7"
        assert client_ip(self.request("192.0.2.1", "203.0.113.7", service_app)) == "192.0.2.1"
        # a client that writes its own header in front of the proxy's cannot choose its address
        assert client_ip(self.request("127.0.0.1", "10.9.9.9, 203.0.113.7", service_app)) == "203.0.113.7"
        assert client_ip(self.request("127.0.0.1", None, service_app)) == "127.0.0.1"


class TestSessions:
    async def test_refresh_renews_until_sign_out_which_is_recorded(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        user = await make_user(client)
        session = (await sign_in(client, user["email"])).json()
        refresh = {"refresh_token": session["refresh_token"]}
        renewed = await client.post("/v1/people/token/refresh", json=refresh)
        assert renewed.status_code == 200
        assert VERIFIER.verify(renewed.json()["access_token"]).user_id == user["id"]
        assert (await client.post("/v1/people/sign-out", json=refresh)).status_code == 204
        assert (await client.post("/v1/people/token/refresh", json=refresh)).status_code == 401
        reason = await scalar(
            db, "SELECT revoked_reason FROM user_sessions WHERE id = :i", i=session["session_id"]
        )
        assert reason == "signed-out"

    async def test_sign_out_ends_that_session_everywhere_and_not_the_persons_other_one(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        user = await make_user(client)
        first = (await sign_in(client, user["email"])).json()
        second = (await sign_in(client, user["email"])).json()
        # each sign-in is its own session, named by the ``sid`` of every token it gets
        assert VERIFIER.verify(first["access_token"]).session_id == first["session_id"]
        assert VERIFIER.verify(second["access_token"]).session_id == second["session_id"]
        renewed = await client.post(
            "/v1/people/token/refresh", json={"refresh_token": first["refresh_token"]}
        )
        assert VERIFIER.verify(renewed.json()["access_token"]).session_id == first["session_id"]
        out = await client.post("/v1/people/sign-out", json={"refresh_token": first["refresh_token"]})
        assert out.status_code == 204
        assert await outbox_types(db, first["session_id"]) == ["roomtax.registry.access.revoked.v1"]
        async with db() as session:
            row = (
                await session.execute(
                    text("SELECT kind, reason FROM revoked_principals WHERE subject_id = :s"),
                    {"s": first["session_id"]},
                )
            ).one()
            payload = (
                await session.execute(
                    text("SELECT payload FROM outbox WHERE key = :k"), {"k": first["session_id"]}
                )
            ).scalar_one()
        assert (row.kind, row.reason) == ("session", "signed-out")
        assert (payload["data"]["kind"], payload["data"]["subject_id"], payload["data"]["reason"]) == (
            "session",
            first["session_id"],
            "signed-out",
        )
        # the other session is untouched: it renews, and nothing was revoked for it or the person
        again = await client.post("/v1/people/token/refresh", json={"refresh_token": second["refresh_token"]})
        assert again.status_code == 200
        assert await outbox_types(db, second["session_id"]) == []
        assert "roomtax.registry.access.revoked.v1" not in await outbox_types(db, user["id"])
        # signing out twice publishes nothing more
        assert (
            await client.post("/v1/people/sign-out", json={"refresh_token": first["refresh_token"]})
        ).status_code == 204
        assert await outbox_types(db, first["session_id"]) == ["roomtax.registry.access.revoked.v1"]

    async def test_a_forged_refresh_secret_is_refused(self, client: httpx.AsyncClient) -> None:
        user = await make_user(client)
        session = (await sign_in(client, user["email"])).json()
        forged = {"refresh_token": session["session_id"] + ".forged"}
        assert (await client.post("/v1/people/token/refresh", json=forged)).status_code == 401
        assert (await client.post("/v1/people/sign-out", json=forged)).status_code == 204
        real = {"refresh_token": session["refresh_token"]}
        assert (await client.post("/v1/people/token/refresh", json=real)).status_code == 200


class TestPasswordChange:
    async def test_change_ends_every_session_and_returns_a_new_one(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        user = await make_user(client)
        first = (await sign_in(client, user["email"])).json()
        bearer = {"Authorization": f"Bearer {first['access_token']}"}
        body = {"current_password": PASSWORD, "new_password": "a brand new passphrase"}
        r = await client.post("/v1/people/me/password", json=body, headers=bearer)
        assert r.status_code == 200, r.text
        assert r.json()["session_id"] != first["session_id"]
        old = {"refresh_token": first["refresh_token"]}
        assert (await client.post("/v1/people/token/refresh", json=old)).status_code == 401
        assert (await sign_in(client, user["email"])).status_code == 401
        assert (await sign_in(client, user["email"], "a brand new passphrase")).status_code == 200
        assert (await outbox_types(db, user["id"]))[-1] == "roomtax.registry.user.changed.v1"
        # the old session's access tokens are refused everywhere; the new session's are not
        assert await outbox_types(db, first["session_id"]) == ["roomtax.registry.access.revoked.v1"]
        reason = await scalar(
            db,
            "SELECT reason FROM revoked_principals WHERE kind = 'session' AND subject_id = :i",
            i=first["session_id"],
        )
        assert reason == "password-changed"
        assert await outbox_types(db, r.json()["session_id"]) == []

    async def test_wrong_current_password_names_the_field_and_changes_nothing(
        self, client: httpx.AsyncClient
    ) -> None:
        user = await make_user(client)
        first = (await sign_in(client, user["email"])).json()
        bearer = {"Authorization": f"Bearer {first['access_token']}"}
        body = {"current_password": "nope", "new_password": "a brand new passphrase"}
        r = await client.post("/v1/people/me/password", json=body, headers=bearer)
        assert (r.status_code, r.json()["errors"][0]["pointer"]) == (422, "#/body/current_password")
        assert (await sign_in(client, user["email"])).status_code == 200

    async def test_an_api_client_has_no_password_here(self, client: httpx.AsyncClient) -> None:
        body = {"current_password": "x", "new_password": "a brand new passphrase"}
        assert (await client.post("/v1/people/me/password", json=body, headers=ADMIN)).status_code == 403
        assert (await client.get("/v1/people/me", headers=ADMIN)).status_code == 403


class TestUserIsolation:
    async def test_only_the_admin_manages_people_and_staff_read_them(self, client: httpx.AsyncClient) -> None:
        op = await make_operator(client)
        user = await make_user(client, "operator", operator_id=op["id"])
        operator = auth("operator", operator_id=op["id"], user_id=user["id"])
        new = {"email": email(), "name": "X", "role": "agency-admin", "password": PASSWORD}
        for headers in (
            auth("agency-auditor"),
            auth("dashboard"),
            operator,
            auth("facilitator", facilitator_id="f"),
        ):
            assert (await client.post("/v1/people/users", json=new, headers=headers)).status_code == 403
            r = await client.post(f"/v1/people/users/{user['id']}/disable", headers=headers)
            assert r.status_code == 403
        for headers, status in ((auth("agency-auditor"), 200), (auth("dashboard"), 403), (operator, 403)):
            assert (await client.get("/v1/people/users", headers=headers)).status_code == status
            assert (await client.get(f"/v1/people/users/{user['id']}", headers=headers)).status_code == status
        assert (await client.get("/v1/people/users/nobody", headers=ADMIN)).status_code == 404

    async def test_staff_who_work_cases_read_names_only(self, client: httpx.AsyncClient) -> None:
        ana = await make_user(client, "agency-admin", name="Ana Rivera")
        luis = await make_user(client, "agency-officer", name="Luis Ortiz")
        op = await make_operator(client)
        asked = {"user_id": [luis["id"], "nobody", ana["id"]]}
        expected = sorted(
            [{"id": ana["id"], "name": "Ana Rivera"}, {"id": luis["id"], "name": "Luis Ortiz"}],
            key=lambda p: p["id"],
        )
        for role in ("agency-officer", "agency-auditor", "agency-admin"):
            r = await client.get("/v1/people/names", params=asked, headers=auth(role))
            assert (r.status_code, r.json()) == (200, expected)  # no e-mail, role or history
        for headers in (
            auth("dashboard"),
            auth("operator", operator_id=op["id"]),
            auth("facilitator", facilitator_id="f"),
        ):
            assert (await client.get("/v1/people/names", params=asked, headers=headers)).status_code == 403
        for params, pointer in (({}, "#/query/user_id"), ({"user_id": ["u"] * 101}, "#/query/user_id")):
            r = await client.get("/v1/people/names", params=params, headers=auth("agency-officer"))
            assert (r.status_code, r.json()["errors"][0]["pointer"]) == (422, pointer)

    async def test_me_is_only_oneself(self, client: httpx.AsyncClient) -> None:
        user = await make_user(client)
        session = (await sign_in(client, user["email"])).json()
        r = await client.get("/v1/people/me", headers={"Authorization": f"Bearer {session['access_token']}"})
        assert (r.status_code, r.json()["id"]) == (200, user["id"])
