"""Sessions, CSRF, fixation, open redirects, clickjacking and the security headers."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from web_factories import csrf, make_person, sign_in, web_settings

from web.app import build_app
from web.core import check_csrf
from web.pages import agency, auth, portal
from web.security import safe_next
from web.session import SessionCodec
from web.settings import WebSettings


def codec() -> SessionCodec:
    return SessionCodec(web_settings().secret_key, max_age=3600)


class TestHeaders:
    async def test_every_page_forbids_framing_and_inline_script(self, web: httpx.AsyncClient) -> None:
        r = await web.get("/sign-in")
        csp = r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert "unsafe-eval" not in csp
        assert (r.headers["x-frame-options"], r.headers["x-content-type-options"]) == ("DENY", "nosniff")
        assert "strict-transport-security" not in r.headers
        for inline in ("<script>", " style=", "onclick"):
            assert inline not in r.text

    def test_hsts_in_production(self) -> None:
        settings = WebSettings(environment="production", secret_key="x" * 40)
        app = build_app(settings)
        from web.security import security_headers

        assert settings.cookie_name == "__Host-roomtax"
        assert app.state.settings.environment == "production"
        assert security_headers(production=True)["Strict-Transport-Security"].startswith("max-age=63072000")

    def test_production_refuses_the_development_secret_and_insecure_cookies(self) -> None:
        with pytest.raises(ValueError, match="WEB_SECRET_KEY"):
            WebSettings(environment="production")
        with pytest.raises(ValueError, match="COOKIE_SECURE"):
            WebSettings(environment="production", secret_key="x" * 40, cookie_secure=False)

    async def test_session_cookie_is_httponly_and_samesite(self, registry_app: FastAPI) -> None:
        app = build_app(web_settings(cookie_secure=True), transport=httpx.ASGITransport(app=registry_app))
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://web.test") as client,
        ):
            cookie = (await client.get("/sign-in")).headers["set-cookie"]
        assert cookie.startswith("__Host-roomtax=")
        assert all(flag in cookie for flag in ("HttpOnly", "Secure", "SameSite=lax", "Path=/"))
        assert "Domain" not in cookie


class TestCsrf:
    def test_every_post_route_checks_the_csrf_token(self) -> None:
        routes = [*auth.router.routes, *portal.router.routes, *agency.router.routes]
        posts = [r for r in routes if isinstance(r, APIRoute) and "POST" in r.methods]
        assert len(posts) >= 6
        for route in posts:
            calls = {d.call for d in route.dependant.dependencies}
            assert check_csrf in calls, route.path

    async def test_a_form_without_the_token_is_refused_and_changes_nothing(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        await web.get("/sign-in")
        r = await web.post("/sign-in", data={"email": person["email"], "password": "correct horse battery"})
        assert r.status_code == 403
        assert (await web.get("/agency")).status_code == 303  # still signed out

    async def test_a_token_of_another_session_is_refused(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        async with httpx.AsyncClient(transport=web._transport, base_url="http://web.test") as other:
            theirs = await csrf(other)
        await web.get("/sign-in")
        data = {"csrf_token": theirs, "email": person["email"], "password": "correct horse battery"}
        assert (await web.post("/sign-in", data=data)).status_code == 403


class TestSessionFixation:
    async def test_sign_in_issues_a_new_session_id(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        before_token = await csrf(web)
        before = codec().loads(web.cookies.get("roomtax_session"))
        r = await sign_in(web, person["email"])
        assert (r.status_code, r.headers["location"]) == (303, "/agency")
        after = codec().loads(web.cookies.get("roomtax_session"))
        assert before is not None
        assert after is not None
        assert after.person is not None
        assert after.sid != before.sid
        assert codec().csrf_token(after) != before_token
        # the anonymous cookie an attacker planted before sign-in is not signed in
        async with httpx.AsyncClient(transport=web._transport, base_url="http://web.test") as attacker:
            attacker.cookies.set("roomtax_session", codec().dumps(before))
            assert (await attacker.get("/agency")).status_code == 303

    async def test_sign_out_ends_the_session_at_the_registry_too(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        await sign_in(web, person["email"])
        stolen = web.cookies.get("roomtax_session")
        assert (await web.get("/account/password")).status_code == 200
        token = await csrf(web, "/account/password")
        assert (await web.post("/sign-out", data={"csrf_token": token})).status_code == 303
        async with httpx.AsyncClient(transport=web._transport, base_url="http://web.test") as thief:
            thief.cookies.set("roomtax_session", stolen or "")
            r = await thief.get("/account/password")
        assert (r.status_code, r.headers["location"]) == (303, "/sign-in?next=%2Faccount%2Fpassword")

    async def test_a_tampered_cookie_is_a_fresh_anonymous_session(self, web: httpx.AsyncClient) -> None:
        web.cookies.set("roomtax_session", "gAAAAAforged")
        r = await web.get("/agency")
        assert r.status_code == 303


class TestOpenRedirects:
    @pytest.mark.parametrize(
        ("target", "expected"),
        [
            ("/portal/lodgings/x?period=2026-01", "/portal/lodgings/x?period=2026-01"),
            ("//evil.example/", "/"),
            ("https://evil.example/", "/"),
            ("/\\evil.example", "/"),
            ("javascript:alert(1)", "/"),
            ("/%0d%0aSet-Cookie:x", "/%0d%0aSet-Cookie:x"),
            ("/\r\nLocation: https://evil.example", "/"),
            ("", "/"),
        ],
    )
    def test_only_local_paths(self, target: str, expected: str) -> None:
        assert safe_next(target) == expected

    async def test_sign_in_never_sends_the_person_off_site(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        r = await sign_in(web, person["email"], next="//evil.example/phish")
        assert r.headers["location"] == "/agency"

    async def test_sign_in_returns_to_the_page_asked_for(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        r = await sign_in(web, person["email"], next="/account/password")
        assert r.headers["location"] == "/account/password"


class TestSignInErrors:
    async def test_wrong_password_is_shown_next_to_the_form_in_spanish(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        web.cookies.set("lang", "es")
        r = await sign_in(web, person["email"], "not the password")
        assert r.status_code == 401
        assert "El correo electrónico o la contraseña no es correcto." in r.text
        assert '<html lang="es">' in r.text

    async def test_empty_fields_are_named(self, web: httpx.AsyncClient) -> None:
        token = await csrf(web)
        r = await web.post("/sign-in", data={"csrf_token": token, "email": "", "password": ""})
        assert r.status_code == 422
        assert 'id="e-email"' in r.text
        assert 'id="e-password"' in r.text
        assert 'aria-invalid="true"' in r.text

    async def test_throttled_account_says_to_wait(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        for _ in range(5):
            assert (await sign_in(web, person["email"], "guess guess guess")).status_code == 401
        r = await sign_in(web, person["email"])
        assert r.status_code == 429
        assert "Too many failed attempts. Wait 15 minutes and try again." in r.text


class TestRoles:
    async def test_an_operator_cannot_open_the_agency_console(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app, "operator")
        assert (await sign_in(web, person["email"])).headers["location"] == "/portal"
        assert (await web.get("/agency")).status_code == 403
        assert (await web.get("/agency/lodgings")).status_code == 403


class TestPasswordChange:
    async def test_change_then_sign_in_with_the_new_password(
        self, web: httpx.AsyncClient, registry_app: FastAPI
    ) -> None:
        person = await make_person(registry_app)
        await sign_in(web, person["email"])
        sid = codec().loads(web.cookies.get("roomtax_session"))
        token = await csrf(web, "/account/password")
        new = "another long passphrase"
        r = await web.post(
            "/account/password",
            data={
                "csrf_token": token,
                "current_password": "nope",
                "new_password": new,
                "confirm_password": new,
            },
        )
        assert r.status_code == 422
        assert "This is not your current password." in r.text
        r = await web.post(
            "/account/password",
            data={
                "csrf_token": token,
                "current_password": "correct horse battery",
                "new_password": new,
                "confirm_password": new,
            },
        )
        assert r.status_code == 200
        assert "Your password was changed." in r.text
        rotated = codec().loads(web.cookies.get("roomtax_session"))
        assert sid is not None
        assert rotated is not None
        assert rotated.sid != sid.sid
        async with httpx.AsyncClient(transport=web._transport, base_url="http://web.test") as fresh:
            assert (await sign_in(fresh, person["email"], new)).status_code == 303
