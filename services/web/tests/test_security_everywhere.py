"""The security list of issue 13 over the whole app, not one page: CSRF on every form and
every POST route, no inline script or style anywhere (the CSP forbids them), framing refused
on every answer, HSTS in production, and no open redirect through any ``next``."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from web_factories import csrf, web_settings

from web.app import build_app
from web.core import check_csrf
from web.settings import WebSettings

TEMPLATES = Path(__file__).resolve().parents[1] / "web" / "templates"
FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S | re.I)


def api_routes(app: FastAPI) -> list[APIRoute]:
    """Every route of the app, including those of the routers it includes."""
    out: list[APIRoute] = []
    for route in app.routes:
        if isinstance(route, APIRoute):
            out.append(route)
        original = getattr(route, "original_router", None)
        if original is not None:
            out += [r for r in original.routes if isinstance(r, APIRoute)]
    return out


def templates() -> list[Path]:
    found = sorted(TEMPLATES.rglob("*.html"))
    assert len(found) > 20
    return found


class TestCsrfEverywhere:
    def test_every_post_route_of_the_app_checks_the_csrf_token(self) -> None:
        app = build_app(web_settings())
        posts = [r for r in api_routes(app) if r.methods & {"POST", "PUT", "PATCH", "DELETE"}]
        assert len(posts) >= 15
        unchecked = [r.path for r in posts if check_csrf not in {d.call for d in r.dependant.dependencies}]
        assert unchecked == []

    def test_every_get_route_changes_nothing_it_could_be_tricked_into(self) -> None:
        """GET routes take no form: a cross-site link or image can only read (SameSite=lax)."""
        app = build_app(web_settings())
        routes = [r for r in api_routes(app) if "GET" in r.methods]
        assert len(routes) >= 20
        for route in routes:
            if "GET" in route.methods:
                assert route.dependant.body_params == [], route.path

    @pytest.mark.parametrize("template", templates(), ids=lambda p: str(p.relative_to(TEMPLATES)))
    def test_every_post_form_carries_the_csrf_token(self, template: Path) -> None:
        for attributes, body in FORM.findall(template.read_text()):
            if re.search(r'method="post"', attributes, re.I):
                assert 'name="csrf_token" value="{{ csrf_token }}"' in body, (template.name, attributes)


class TestNoInlineScript:
    @pytest.mark.parametrize("template", templates(), ids=lambda p: str(p.relative_to(TEMPLATES)))
    def test_no_inline_script_style_or_handler(self, template: Path) -> None:
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text, re.I):
            assert re.search(r'\bsrc="/static/', tag), (template.name, tag)
        assert re.findall(r"<script\b[^>]*>\s*[^<\s]", text) == []  # nothing between the tags
        assert re.findall(r"\son[a-z]+\s*=", text, re.I) == []  # onclick=, onload=, …
        assert re.findall(r"\sstyle\s*=", text, re.I) == []
        assert "<style" not in text.lower()
        assert "javascript:" not in text.lower()


class TestFramingRefusedEverywhere:
    async def test_pages_redirects_errors_and_static_files(self, web: httpx.AsyncClient) -> None:
        answers = {
            "/sign-in": 200,
            "/agency": 303,  # signed out: to the sign-in page
            "/no-such-page": 404,
            "/static/vendor/htmx-2.0.11/htmx.min.js": 200,
            "/healthz": 200,
        }
        for path, status in answers.items():
            r = await web.get(path)
            assert r.status_code == status, path
            assert "frame-ancestors 'none'" in r.headers["content-security-policy"], path
            assert r.headers["x-frame-options"] == "DENY", path
            assert r.headers["x-content-type-options"] == "nosniff", path

    async def test_a_refused_form_is_framed_by_nobody_either(self, web: httpx.AsyncClient) -> None:
        r = await web.post("/sign-in", data={"email": "a@b.c", "password": "x"})
        assert r.status_code == 403
        assert r.headers["x-frame-options"] == "DENY"


class TestHsts:
    async def test_a_production_answer_carries_hsts_and_a_development_one_does_not(
        self, registry_app: FastAPI
    ) -> None:
        production = WebSettings(
            environment="production", secret_key="p" * 40, registry_url="http://registry"
        )
        for settings, https in ((production, True), (web_settings(), False)):
            app = build_app(settings, transport=httpx.ASGITransport(app=registry_app))
            base = "https://web.test" if https else "http://web.test"
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base) as client,
            ):
                r = await client.get("/sign-in")
            assert r.status_code == 200
            if https:
                assert r.headers["strict-transport-security"] == "max-age=63072000; includeSubDomains"
                assert r.headers["set-cookie"].startswith("__Host-roomtax=")
            else:
                assert "strict-transport-security" not in r.headers


class TestNoOpenRedirect:
    @pytest.mark.parametrize("target", ["//evil.example/", "https://evil.example/", "/\\evil.example"])
    async def test_the_language_switch_stays_on_the_site(self, web: httpx.AsyncClient, target: str) -> None:
        token = await csrf(web)
        r = await web.post("/language", data={"csrf_token": token, "to": "es", "next": target})
        assert (r.status_code, r.headers["location"]) == (303, "/")

    async def test_the_language_switch_returns_to_a_local_page(self, web: httpx.AsyncClient) -> None:
        token = await csrf(web)
        r = await web.post(
            "/language", data={"csrf_token": token, "to": "es", "next": "/sign-in?next=%2Fportal"}
        )
        assert (r.status_code, r.headers["location"]) == (303, "/sign-in?next=%2Fportal")

    async def test_the_sign_in_page_never_offers_an_off_site_next(self, web: httpx.AsyncClient) -> None:
        r = await web.get("/sign-in", params={"next": "https://evil.example/"})
        assert 'name="next" value=""' in r.text
