"""OpenID Connect sign-in against a local stub issuer (a real HTTP server), through httpx.

The browser's part is played by following the redirects by hand: web app → the issuer's
authorization endpoint → back to the web app's callback, which exchanges the code (PKCE)
and has the real registry verify the ID token and open a session for the mapped person.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from joserfc.jwk import RSAKey
from oidc_stub import CALLBACK, CLIENT_ID, CLIENT_SECRET, StubIssuer, honest, issuer, oidc_registry
from sqlalchemy import text
from web_factories import csrf, make_person, web_settings

from registry.settings import RegistrySettings
from registry.users.oidc import IssuerKeys, verify_id_token
from servicekit import devkeys
from servicekit.auth import TokenVerifier
from servicekit.errors import Unauthorized
from web.app import build_app
from web.session import SessionCodec
from web.settings import WebSettings

__all__ = ["honest", "issuer", "oidc_registry"]  # the fixtures this module uses
VERIFIER = TokenVerifier(devkeys.DEV_PUBLIC_KEY, issuer="roomtax-registry", audience="roomtax")


@pytest.fixture
async def browser(oidc_registry: FastAPI, issuer: StubIssuer) -> AsyncIterator[httpx.AsyncClient]:
    settings = web_settings(
        oidc_issuer=issuer.url,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret=CLIENT_SECRET,
        oidc_redirect_uri=CALLBACK,
        oidc_name="Agency ID",
    )
    app = build_app(settings, transport=httpx.ASGITransport(app=oidc_registry))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://web.test") as client,
    ):
        yield client


def codec() -> SessionCodec:
    return SessionCodec(web_settings().secret_key, max_age=3600)


async def to_the_issuer(browser: httpx.AsyncClient, next: str = "") -> dict[str, str]:
    """Start at the web app; the query it sends to the issuer's authorization endpoint."""
    r = await browser.get("/sign-in/oidc", params={"next": next} if next else None)
    assert r.status_code == 303, r.text
    return {k: v[0] for k, v in parse_qs(urlsplit(r.headers["location"]).query).items()}


async def back_from_the_issuer(browser: httpx.AsyncClient, issuer: StubIssuer, query: dict[str, str]) -> str:
    """The issuer approves and sends the browser back: the callback path on the web app."""
    async with httpx.AsyncClient() as plain:
        r = await plain.get(f"{issuer.url}/authorize", params=query)
    assert r.status_code == 302
    location = r.headers["location"]
    assert location.startswith(CALLBACK)
    return location.removeprefix("http://web.test")


async def rows(app: FastAPI, sql: str, **params: str) -> int:
    async with app.state.sessionmaker() as session:
        return int((await session.execute(text(sql), params)).scalar_one())


async def sessions_of(app: FastAPI, person: dict[str, str]) -> int:
    return await rows(app, "SELECT count(*) FROM user_sessions WHERE user_id = :u", u=person["id"])


async def known(app: FastAPI, issuer: StubIssuer) -> dict[str, str]:
    """A person the agency created, and who the issuer says signs in."""
    person = await make_person(app, "agency-auditor")
    issuer.email = person["email"]
    return person


async def round_trip(browser: httpx.AsyncClient, issuer: StubIssuer) -> httpx.Response:
    """Start, approve at the issuer, come back: the callback's answer."""
    query = await to_the_issuer(browser)
    return await browser.get(await back_from_the_issuer(browser, issuer, query))


class TestSignIn:
    async def test_a_known_person_signs_in_with_pkce_state_and_nonce(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        person = await make_person(oidc_registry, "agency-auditor")
        issuer.email = person["email"].upper()  # the provider's spelling of the address
        page = await browser.get("/sign-in")
        assert 'href="/sign-in/oidc"' in page.text
        assert "Sign in with Agency ID" in page.text
        query = await to_the_issuer(browser, next="/account/password")
        assert (query["response_type"], query["client_id"], query["redirect_uri"]) == (
            "code",
            CLIENT_ID,
            CALLBACK,
        )
        assert (query["scope"], query["code_challenge_method"]) == ("openid email profile", "S256")
        assert len(query["state"]) >= 40
        assert len(query["nonce"]) >= 40
        assert query["state"] != query["nonce"]
        pending = codec().loads(browser.cookies.get("roomtax_session"))
        assert pending is not None
        assert pending.oidc is not None
        assert pending.person is None
        callback = await back_from_the_issuer(browser, issuer, query)
        r = await browser.get(callback)
        assert (r.status_code, r.headers["location"]) == (303, "/account/password")
        session = codec().loads(browser.cookies.get("roomtax_session"))
        assert session is not None
        assert session.person is not None
        assert (session.person.user_id, session.person.role) == (person["id"], "agency-auditor")
        assert session.sid != pending.sid  # a new session id at sign-in (no fixation)
        assert session.oidc is None
        assert session.access_token is not None
        principal = VERIFIER.verify(session.access_token)
        assert (principal.user_id, principal.client_id) == (person["id"], f"person:{person['id']}")
        assert principal.session_id is not None
        assert issuer.pkce_checked[-1] == parse_qs(urlsplit(callback).query)["code"][0]
        assert (await browser.get("/account/password")).status_code == 200
        # the registry recorded the sign-in as any other
        assert (
            await rows(oidc_registry, "SELECT count(*) FROM user_sessions WHERE user_id = :u", u=person["id"])
            == 1
        )
        # the callback cannot be replayed: its state was used up
        again = await browser.get(callback)
        assert again.status_code == 400
        assert "This sign-in did not start here" in again.text


class TestRefused:
    async def test_an_off_site_next_is_dropped_before_the_trip(self, browser: httpx.AsyncClient) -> None:
        await to_the_issuer(browser, next="//evil.example/phish")
        pending = codec().loads(browser.cookies.get("roomtax_session"))
        assert pending is not None
        assert pending.oidc is not None
        assert pending.oidc["next"] == ""

    async def test_a_wrong_state_is_refused_and_signs_nobody_in(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        person = await known(oidc_registry, issuer)
        query = await to_the_issuer(browser)
        callback = await back_from_the_issuer(browser, issuer, {**query, "state": "forged-" + query["state"]})
        r = await browser.get(callback)
        assert r.status_code == 400
        assert "The sign-in expired or was started in another window. Sign in again." in r.text
        assert issuer.pkce_checked.count(parse_qs(urlsplit(callback).query)["code"][0]) == 0
        assert (await browser.get("/account/password")).status_code == 303
        assert await sessions_of(oidc_registry, person) == 0

    async def test_a_callback_this_browser_never_started_is_refused(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        """Login CSRF: an attacker's own code and state, replayed into the victim's browser."""
        person = await known(oidc_registry, issuer)
        async with httpx.AsyncClient(transport=browser._transport, base_url="http://web.test") as attacker:
            query = await to_the_issuer(attacker)
        callback = await back_from_the_issuer(browser, issuer, query)
        r = await browser.get(callback)
        assert r.status_code == 400
        assert await sessions_of(oidc_registry, person) == 0

    @pytest.mark.parametrize(
        ("twist", "value"),
        [("nonce", "a-nonce-this-browser-never-sent-0123456789"), ("audience", "another-client")],
    )
    async def test_a_wrong_nonce_or_audience_is_refused(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI, twist: str, value: str
    ) -> None:
        person = await known(oidc_registry, issuer)
        setattr(issuer, twist, value)
        r = await round_trip(browser, issuer)
        assert r.status_code == 401
        assert "The sign-in could not be verified" in r.text
        assert (await browser.get("/account/password")).status_code == 303
        assert await sessions_of(oidc_registry, person) == 0

    async def test_an_unknown_person_gets_a_clear_page_and_nothing_is_created(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        issuer.email = "stranger-0f3a@example.pr"
        users = await rows(oidc_registry, "SELECT count(*) FROM users")
        sessions = await rows(oidc_registry, "SELECT count(*) FROM user_sessions")
        browser.cookies.set("lang", "es")
        r = await round_trip(browser, issuer)
        assert r.status_code == 403
        assert "No hay una cuenta para esta persona" in r.text
        assert '<html lang="es">' in r.text
        assert await rows(oidc_registry, "SELECT count(*) FROM users") == users
        assert await rows(oidc_registry, "SELECT count(*) FROM user_sessions") == sessions
        assert (
            await rows(
                oidc_registry,
                "SELECT count(*) FROM login_attempts WHERE email = :e AND outcome = 'unknown'",
                e="stranger-0f3a@example.pr",
            )
            == 1
        )
        browser.cookies.set("lang", "en")
        r = await round_trip(browser, issuer)
        assert (r.status_code, "No account for this person" in r.text) == (403, True)

    async def test_an_unverified_address_names_nobody(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        person = await known(oidc_registry, issuer)
        issuer.email_verified = False
        r = await round_trip(browser, issuer)
        assert r.status_code == 403
        assert await sessions_of(oidc_registry, person) == 0

    async def test_a_token_signed_with_a_key_outside_the_issuers_jwks_is_refused(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        person = await known(oidc_registry, issuer)
        issuer.signing_key = RSAKey.generate_key(2048, parameters={"kid": "stub-1"})  # same kid, other key
        r = await round_trip(browser, issuer)
        assert r.status_code == 401
        assert await sessions_of(oidc_registry, person) == 0


class TestReplayAndBinding:
    async def test_the_same_id_token_signs_in_once(self, issuer: StubIssuer, oidc_registry: FastAPI) -> None:
        person = await known(oidc_registry, issuer)
        nonce = secrets.token_urlsafe(32)
        grant = {"redirect_uri": CALLBACK, "state": "s", "nonce": nonce, "code_challenge_method": "S256"}
        token = issue_directly(issuer, grant)
        client: httpx.AsyncClient = oidc_registry.state.test_client
        body = {"id_token": token, "nonce": nonce}
        first = await client.post("/v1/people/token/oidc", json=body)
        assert first.status_code == 200, first.text
        assert first.json()["user"]["id"] == person["id"]
        again = await client.post("/v1/people/token/oidc", json=body)
        assert again.status_code == 401
        assert again.headers["content-type"].startswith("application/problem+json")
        problem = again.json()
        assert (problem["type"].rsplit("/", 1)[-1], problem["detail"]) == (
            "id-token-already-used",
            "this ID token was already used: sign in again",
        )
        spanish = await client.post("/v1/people/token/oidc", json=body, headers={"Accept-Language": "es"})
        assert (spanish.status_code, spanish.json()["title"], spanish.json()["detail"]) == (
            401,
            "Token de identidad ya usado",
            "este token de identidad ya se usó: inicie sesión de nuevo",
        )
        assert await sessions_of(oidc_registry, person) == 1
        replays = "SELECT count(*) FROM login_attempts WHERE email = :e AND outcome = 'replayed'"
        assert await rows(oidc_registry, replays, e=person["email"]) == 2
        # the nonce is kept until the token expires (exp plus the leeway), then let go
        kept = "SELECT count(*) FROM oidc_used_nonces WHERE expires_at > now() + interval '5 minutes'"
        assert await rows(oidc_registry, kept) >= 1

    async def test_after_the_first_sign_in_the_provider_subject_names_the_person(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        first = await known(oidc_registry, issuer)
        other = await make_person(oidc_registry, "agency-admin")
        issuer.subject = "stub|" + secrets.token_hex(6)
        assert (await round_trip(browser, issuer)).status_code == 303  # binds first to this sub
        bound = "SELECT count(*) FROM oidc_identities WHERE subject = :s AND user_id = :u"
        assert await rows(oidc_registry, bound, s=issuer.subject, u=first["id"]) == 1
        await browser.post("/sign-out", data={"csrf_token": await csrf(browser, "/account/password")})
        # the provider now says this person's address is the other person's: still the first
        issuer.email = other["email"]
        r = await round_trip(browser, issuer)
        assert r.status_code == 303
        session = codec().loads(browser.cookies.get("roomtax_session"))
        assert session is not None
        assert session.person is not None
        assert (session.person.user_id, session.person.role) == (first["id"], "agency-auditor")
        assert await sessions_of(oidc_registry, other) == 0
        # ...or an address the registry does not know: still the first
        issuer.email = "renamed-" + first["email"]
        assert (await round_trip(browser, issuer)).status_code == 303
        assert await sessions_of(oidc_registry, first) == 3

    async def test_another_subject_with_a_bound_persons_address_is_nobody(
        self, browser: httpx.AsyncClient, issuer: StubIssuer, oidc_registry: FastAPI
    ) -> None:
        person = await known(oidc_registry, issuer)
        issuer.subject = "stub|" + secrets.token_hex(6)
        assert (await round_trip(browser, issuer)).status_code == 303
        assert await sessions_of(oidc_registry, person) == 1
        browser.cookies.clear()
        issuer.subject = "stub|" + secrets.token_hex(6)  # another account at the provider, same address
        r = await round_trip(browser, issuer)
        assert r.status_code == 403
        assert "No account for this person" in r.text
        assert await sessions_of(oidc_registry, person) == 1
        refused = (
            "SELECT count(*) FROM login_attempts WHERE email = :e AND outcome = 'bound-to-another-subject'"
        )
        assert await rows(oidc_registry, refused, e=person["email"]) == 1


class TestSettings:
    def test_half_a_configuration_and_plain_http_in_production_are_refused(self) -> None:
        with pytest.raises(ValueError, match="WEB_OIDC_CLIENT_ID and WEB_OIDC_REDIRECT_URI"):
            WebSettings(oidc_issuer="https://id.example.pr")
        with pytest.raises(ValueError, match="must be https"):
            WebSettings(
                environment="production",
                secret_key="p" * 40,
                oidc_issuer="http://id.example.pr",
                oidc_client_id=CLIENT_ID,
                oidc_redirect_uri="https://tax.example.pr/sign-in/oidc/callback",
            )
        with pytest.raises(ValueError, match="REGISTRY_OIDC_AUDIENCE"):
            RegistrySettings(oidc_issuer="https://id.example.pr")

    async def test_without_an_issuer_there_is_no_provider_button_and_no_route(
        self, web: httpx.AsyncClient
    ) -> None:
        page = await web.get("/sign-in")
        assert "/sign-in/oidc" not in page.text
        assert (await web.get("/sign-in/oidc")).status_code == 404
        assert (
            await web.get("/sign-in/oidc/callback", params={"code": "x", "state": "y"})
        ).status_code == 404


class TestRegistryVerifiesTheIdToken:
    async def test_expired_and_wrong_issuer_are_named(self, issuer: StubIssuer) -> None:
        issuer.email = "someone@example.pr"
        keys = IssuerKeys(issuer.url)
        grant_query = {
            "redirect_uri": CALLBACK,
            "state": "s",
            "nonce": "n" * 20,
            "code_challenge_method": "S256",
        }
        token = issue_directly(issuer, grant_query)
        claims = await verify_id_token(token, keys=keys, audience=CLIENT_ID, nonce="n" * 20)
        assert (claims["iss"], claims["aud"], claims["email"]) == (
            issuer.url,
            CLIENT_ID,
            "someone@example.pr",
        )
        with pytest.raises(Unauthorized, match="exp"):
            await verify_id_token(
                token, keys=keys, audience=CLIENT_ID, nonce="n" * 20, now=claims["exp"] + 120
            )
        with pytest.raises(Unauthorized, match="aud"):
            await verify_id_token(token, keys=keys, audience="another-client", nonce="n" * 20)
        with pytest.raises(Unauthorized, match="nonce"):
            await verify_id_token(token, keys=keys, audience=CLIENT_ID, nonce="m" * 20)
        other = IssuerKeys(issuer.url + "/")
        other.issuer = "https://elsewhere.example"
        other._keys, other._kids = await keys.key_set("stub-1"), {"stub-1"}
        with pytest.raises(Unauthorized, match="iss"):
            await verify_id_token(token, keys=other, audience=CLIENT_ID, nonce="n" * 20)


def issue_directly(issuer: StubIssuer, params: dict[str, str]) -> str:
    """An ID token as the token endpoint would issue it (PKCE done with a known verifier)."""
    import base64
    import hashlib

    verifier = "v" * 50
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    from oidc_stub import Grant

    issuer.grants["direct"] = Grant({**params, "code_challenge": challenge})
    auth = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    status, body = issuer.token(
        {
            "grant_type": "authorization_code",
            "code": "direct",
            "redirect_uri": CALLBACK,
            "code_verifier": verifier,
        },
        auth,
    )
    assert status == 200, body
    return str(body["id_token"])
