"""Signing out at the web app ends that sign-in session everywhere, and only that one.

The web app's sign-out ends the registry session its cookie holds; the registry publishes
the session's revocation (``sid``), and an API refuses the access token the cookie held
within its denylist refresh (1 s) even though the token has not expired. The person's
other browser keeps working. (``tests/test_platform_access.py`` shows the same at filing
and assessment, as separate processes fed by the broker.)
"""

from __future__ import annotations

import asyncio
import time

import httpx
from fastapi import FastAPI
from web_factories import csrf, make_person, sign_in, web_settings

from servicekit import devkeys
from servicekit.auth import TokenVerifier
from web.session import Session, SessionCodec

VERIFIER = TokenVerifier(devkeys.DEV_PUBLIC_KEY, issuer="roomtax-registry", audience="roomtax")


def session_of(client: httpx.AsyncClient) -> Session:
    session = SessionCodec(web_settings().secret_key, max_age=3600).loads(
        client.cookies.get("roomtax_session")
    )
    assert session is not None
    return session


async def me(registry_app: FastAPI, token: str) -> httpx.Response:
    client: httpx.AsyncClient = registry_app.state.test_client
    return await client.get("/v1/people/me", headers={"Authorization": f"Bearer {token}"})


async def refused_within(registry_app: FastAPI, token: str, seconds: float) -> httpx.Response:
    start = time.monotonic()
    while True:
        r = await me(registry_app, token)
        if r.status_code == 401:
            return r
        assert time.monotonic() - start < seconds, (r.status_code, r.text)
        await asyncio.sleep(0.1)


async def test_sign_out_ends_this_browsers_session_everywhere_and_not_the_other_browsers(
    web: httpx.AsyncClient, registry_app: FastAPI
) -> None:
    person = await make_person(registry_app)
    async with httpx.AsyncClient(transport=web._transport, base_url="http://web.test") as other:
        assert (await sign_in(web, person["email"])).status_code == 303
        assert (await sign_in(other, person["email"])).status_code == 303
        mine, theirs = session_of(web), session_of(other)
        assert mine.access_token is not None
        assert theirs.access_token is not None
        # two sign-ins, two registry sessions: each token names its own
        sid = VERIFIER.verify(mine.access_token).session_id
        assert sid is not None
        assert sid != VERIFIER.verify(theirs.access_token).session_id
        assert (await me(registry_app, mine.access_token)).status_code == 200

        token = await csrf(web, "/account/password")
        assert (await web.post("/sign-out", data={"csrf_token": token})).status_code == 303
        refused = await refused_within(registry_app, mine.access_token, seconds=5)
        assert refused.json()["detail"] == "this sign-in session has ended: sign in again"
        assert (await web.get("/account/password")).status_code == 303  # signed out here

        # the other browser: its page, its token, its renewal all still work
        assert (await other.get("/account/password")).status_code == 200
        assert (await me(registry_app, theirs.access_token)).status_code == 200
        renewed = session_of(other)
        assert renewed.access_token is not None
        assert (
            VERIFIER.verify(renewed.access_token).session_id
            == VERIFIER.verify(theirs.access_token).session_id
        )
