"""OpenID Connect sign-in in real Chromium, both languages: the browser follows the redirects
to the local stub issuer and back; every page is checked by axe and shot."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from oidc_stub import CLIENT_ID, CLIENT_SECRET, StubIssuer, honest, issuer, oidc_registry
from playwright.async_api import Browser, expect
from web_browser import new_walker
from web_factories import make_person, web_settings

from servicekit.testing import free_port
from web.app import build_app

__all__ = ["honest", "issuer", "oidc_registry"]  # the fixtures this module uses
SHOTS = Path(__file__).resolve().parents[3] / ".run" / "web-oidc"


@pytest.fixture(scope="module")
async def site(oidc_registry: FastAPI, issuer: StubIssuer) -> AsyncIterator[str]:
    """The web app served over real HTTP (uvicorn, in this loop), its backend the registry."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = web_settings(
        oidc_issuer=issuer.url,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret=CLIENT_SECRET,
        oidc_redirect_uri=f"{url}/sign-in/oidc/callback",
        oidc_name="Agency ID",
    )
    app = build_app(settings, transport=httpx.ASGITransport(app=oidc_registry))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to await
        await asyncio.sleep(0.05)
    yield url
    server.should_exit = True
    await task


async def test_a_person_signs_in_through_the_provider_and_a_stranger_is_told_why_not(
    browser: Browser, site: str, issuer: StubIssuer, oidc_registry: FastAPI
) -> None:
    person = await make_person(oidc_registry, "agency-auditor")
    issuer.email = person["email"]
    w = await new_walker(browser, site, SHOTS, "oidc")
    await w.goto("/sign-in?next=%2Faccount%2Fpassword", "sign-in")
    await w.page.get_by_role("link", name="Sign in with Agency ID").click()
    await expect(w.page).to_have_url(f"{site}/account/password")
    await w.check("signed-in")
    await expect(w.page.locator("h1")).to_have_text("Change your password")

    stranger = await new_walker(browser, site, SHOTS, "oidc-stranger")
    await stranger.page.context.add_cookies([{"name": "lang", "value": "es", "url": site}])
    issuer.email = "nadie-7c1e@example.pr"
    await stranger.goto("/sign-in", "sign-in-es")
    await stranger.page.get_by_role("link", name="Iniciar sesión con Agency ID").click()
    await expect(stranger.page.locator("h1")).to_have_text("No hay una cuenta para esta persona")
    await stranger.check("no-account-es")
    issuer.email = "nobody-7c1e@example.pr"
    await stranger.page.context.add_cookies([{"name": "lang", "value": "en", "url": site}])
    await stranger.goto("/sign-in/oidc", "no-account-en")
    await expect(stranger.page.locator("h1")).to_have_text("No account for this person")
