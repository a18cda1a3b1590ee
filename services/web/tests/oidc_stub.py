"""A local OpenID Connect issuer for the tests: a real HTTP server on 127.0.0.1.

Discovery document, JWKS, an authorization endpoint that approves at once (the person is
whoever the test says) and a token endpoint that checks the client's secret, the redirect
URI and the PKCE verifier, then returns an ID token signed with a key made by joserfc. A
test can make it misbehave: another nonce, another audience, another signing key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from fastapi import FastAPI
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from registry.app import build_app as build_registry
from registry.settings import RegistrySettings
from servicekit.testing import BrokerProcess, free_port, fresh_database, serving

CLIENT_ID, CLIENT_SECRET = "roomtax-web", "stub-client-secret"
CALLBACK = "http://web.test/sign-in/oidc/callback"
REGISTRY_MIGRATIONS = Path(__file__).resolve().parents[2] / "registry" / "migrations"


@dataclass
class Grant:
    params: dict[str, str]
    redeemed: bool = False


@dataclass
class StubIssuer:
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "stub-1"}))
    #: who signs in at the provider, and what the next ID token says (a test changes these)
    email: str = ""
    email_verified: bool = True
    subject: str | None = None  # the person's ``sub``: by default one per address
    audience: str | None = None
    nonce: str | None = None
    signing_key: RSAKey | None = None
    grants: dict[str, Grant] = field(default_factory=dict)
    pkce_checked: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlsplit(self.path)
                if url.path == "/.well-known/openid-configuration":
                    self.reply(200, issuer.discovery())
                elif url.path == "/jwks":
                    self.reply(200, KeySet([issuer.key]).as_dict(private=False))
                elif url.path == "/authorize":
                    params = {k: v[0] for k, v in parse_qs(url.query).items()}
                    code = secrets.token_urlsafe(16)
                    issuer.grants[code] = Grant(params)
                    back = f"{params['redirect_uri']}?{urlencode({'code': code, 'state': params['state']})}"
                    self.send_response(302)
                    self.send_header("Location", back)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.reply(404, {"error": "not_found"})

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                form = {k: v[0] for k, v in parse_qs(body).items()}
                status, answer = issuer.token(form, self.headers.get("Authorization", ""))
                self.reply(status, answer)

            def reply(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def token(self, form: dict[str, str], authorization: str) -> tuple[int, dict[str, Any]]:
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if authorization != expected:
            return 401, {"error": "invalid_client"}
        grant = self.grants.get(form.get("code", ""))
        if form.get("grant_type") != "authorization_code" or grant is None or grant.redeemed:
            return 400, {"error": "invalid_grant"}
        if form.get("redirect_uri") != grant.params["redirect_uri"]:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri differs"}
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if grant.params.get("code_challenge_method") != "S256" or challenge != grant.params.get(
            "code_challenge"
        ):
            return 400, {"error": "invalid_grant", "error_description": "PKCE verifier does not match"}
        self.pkce_checked.append(form["code"])
        grant.redeemed = True
        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": self.audience or CLIENT_ID,
            "sub": self.subject or "stub|" + hashlib.sha256(self.email.encode()).hexdigest()[:12],
            "email": self.email,
            "email_verified": self.email_verified,
            "nonce": self.nonce or grant.params["nonce"],
            "iat": now,
            "exp": now + 300,
        }
        key = self.signing_key or self.key
        id_token = jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)
        return 200, {"access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "id_token": id_token}


@pytest.fixture(scope="module")
def issuer() -> Iterator[StubIssuer]:
    stub = StubIssuer()
    stub.thread.start()
    try:
        yield stub
    finally:
        stub.server.shutdown()


@pytest.fixture(autouse=True)
def honest(issuer: StubIssuer) -> None:
    """Every test starts with an issuer that tells the truth."""
    issuer.audience = issuer.nonce = issuer.signing_key = issuer.subject = None
    issuer.email_verified = True


@pytest.fixture(scope="module")
async def oidc_registry(
    broker: BrokerProcess, issuer: StubIssuer, request: pytest.FixtureRequest
) -> AsyncIterator[FastAPI]:
    """The real registry, trusting the stub's ID tokens issued to the web app's client
    (a database per test module: xdist may run two modules at once)."""
    url = await fresh_database(f"roomtax_test_web_{request.module.__name__}", REGISTRY_MIGRATIONS)
    settings = RegistrySettings(
        environment="test",
        database_url=url,
        kafka_bootstrap=broker.bootstrap,
        oidc_issuer=issuer.url,
        oidc_audience=CLIENT_ID,
    )
    async with serving(build_registry(settings)) as app:
        yield app
