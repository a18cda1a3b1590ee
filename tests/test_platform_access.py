"""Cross-service access and readiness, with real processes, real TCP and a real broker.

- A client revoked at the registry is refused by every service within seconds: the
  registry publishes ``roomtax.registry.access.revoked.v1``, each service's worker
  records it in its own table and its API's denylist picks it up (issue 10, item 12).
- A person's sign-in session ended at the registry (sign-out, or a password change made
  in another session) is refused by every service within seconds, even before its access
  token expires; the person's other sessions go on working (the tokens' ``sid`` claim).
- An API's readiness depends on its database only: with the broker down every
  ``/readyz`` stays 200 and writes still succeed (the outbox holds their events), while
  the workers report the broker as unavailable (issue 10, item 13).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from platform_harness import Api, Platform, eventually, new_client

READS = {
    "registry": "/v1/lodgings",
    "filing": "/v1/declarations",
    "assessment": "/v1/dashboard/aging",
    "distribution": "/v1/runs",
}


@pytest.fixture(scope="module")
async def platform(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Platform]:
    p = Platform(prefix="roomtax_e2e_access", heartbeats=tmp_path_factory.mktemp("heartbeats"))
    try:
        await p.start()
        yield p
    finally:
        p.stop()


async def statuses(api: Api) -> dict[str, int]:
    got = await asyncio.gather(*(api.call("GET", svc, path) for svc, path in READS.items()))
    return {svc: r.status_code for svc, r in zip(READS, got, strict=True)}


async def test_a_revoked_client_is_refused_by_every_service_within_seconds(platform: Platform) -> None:
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    victim = await new_client(platform, admin, "dashboard to revoke", "dashboard")
    bystander = await new_client(platform, admin, "dashboard that stays", "dashboard")
    try:
        assert await statuses(victim) == dict.fromkeys(READS, 200)
        clients = await admin.get("registry", "/v1/oauth-clients")
        revoked_id = next(c["client_id"] for c in clients if c["name"] == "dashboard to revoke")
        started = time.monotonic()
        await admin.post("registry", f"/v1/oauth-clients/{revoked_id}/revoke", expect=200)

        async def refused_everywhere() -> dict[str, int] | None:
            now = await statuses(victim)
            return now if set(now.values()) == {401} else None

        await eventually(refused_everywhere, timeout=15, interval=0.2)
        took = time.monotonic() - started
        assert took < 10, f"revocation took {took:.1f}s to reach every service"
        r = await victim.call("GET", "filing", READS["filing"])
        assert r.json()["detail"] == "the client's access has been revoked"
        assert await statuses(bystander) == dict.fromkeys(READS, 200)
    finally:
        for api in (admin, victim, bystander):
            await api.close()


async def sign_in_person(platform: Platform, email: str, password: str) -> tuple[Api, dict[str, Any]]:
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(
            f"{platform.url('registry')}/v1/people/token", json={"email": email, "password": password}
        )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return Api(platform, body["access_token"]), body


async def test_a_signed_out_session_is_refused_everywhere_and_the_persons_other_session_is_not(
    platform: Platform,
) -> None:
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    email, password = f"auditor-{uuid.uuid4().hex[:8]}@example.pr", "correct horse battery"
    await admin.post(
        "registry",
        "/v1/people/users",
        {"email": email, "name": "Carmen Soto", "role": "agency-auditor", "password": password},
        expect=201,
    )
    (laptop, laptop_session), (phone, _) = [await sign_in_person(platform, email, password) for _ in range(2)]
    tablet, tablet_session = await sign_in_person(platform, email, password)
    people = (laptop, phone, tablet)
    try:
        for api in people:
            assert await statuses(api) == dict.fromkeys(READS, 200)
        started = time.monotonic()
        r = await laptop.call(
            "POST", "registry", "/v1/people/sign-out", json={"refresh_token": laptop_session["refresh_token"]}
        )
        assert r.status_code == 204

        async def refused(api: Api) -> dict[str, int] | None:
            now = await statuses(api)
            return now if set(now.values()) == {401} else None

        await eventually(lambda: refused(laptop), timeout=15, interval=0.2)
        took = time.monotonic() - started
        assert took < 10, f"the sign-out took {took:.1f}s to reach every service"
        for svc in ("filing", "assessment"):
            r = await laptop.call("GET", svc, READS[svc])
            assert (r.status_code, r.json()["detail"]) == (
                401,
                "this sign-in session has ended: sign in again",
            )
        renew = await laptop.call(
            "POST",
            "registry",
            "/v1/people/token/refresh",
            json={"refresh_token": laptop_session["refresh_token"]},
        )
        assert renew.status_code == 401
        # one session ended, not the person
        assert await statuses(phone) == dict.fromkeys(READS, 200)
        assert await statuses(tablet) == dict.fromkeys(READS, 200)

        # a password change made on the tablet ends the phone's session everywhere too
        changed = await tablet.post(
            "registry",
            "/v1/people/me/password",
            {"current_password": password, "new_password": "a brand new passphrase"},
            expect=200,
        )
        assert changed["session_id"] != tablet_session["session_id"]
        await eventually(lambda: refused(phone), timeout=15, interval=0.2)
        await eventually(lambda: refused(tablet), timeout=15, interval=0.2)
        renewed_tablet = Api(platform, changed["access_token"])
        people = (*people, renewed_tablet)
        assert await statuses(renewed_tablet) == dict.fromkeys(READS, 200)
    finally:
        for api in (admin, *people):
            await api.close()


async def test_apis_stay_ready_and_writable_while_the_broker_is_down(platform: Platform) -> None:
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    beats = platform.heartbeats
    assert beats is not None
    try:
        seen: dict[str, object] = {}

        async def workers_report(state: str) -> bool:
            """Whether every worker's heartbeat says ``state`` of the broker (``seen``: what each says)."""
            for name in platform.services:
                path = beats / f"{name}.heartbeat"
                seen[name] = json.loads(path.read_text() or "{}").get("broker") if path.exists() else None
            return set(seen.values()) == {state}

        await eventually(lambda: workers_report("ok"), timeout=30)
        platform.broker.stop()
        async with httpx.AsyncClient(timeout=10) as client:
            for name in platform.services:
                await asyncio.sleep(2.1)  # past the readiness cache of the previous answer
                r = await client.get(f"{platform.url(name)}/readyz")
                assert (r.status_code, r.json()) == (200, {"status": "ready", "checks": {"database": "ok"}})
        made = await admin.call(
            "POST", "registry", "/v1/operators", json={"name": "Written while Kafka is down"}
        )
        assert made.status_code == 201, made.text
        # the workers notice the broker is gone at their next health probe; a loaded machine is slow
        try:
            await eventually(lambda: workers_report("unavailable"), timeout=120)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the workers' heartbeats say {seen}") from None
    finally:
        platform.broker.start()
        await admin.close()
