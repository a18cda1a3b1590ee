"""OpenID Connect sign-in (authorization code with PKCE) through the agency's identity provider.

``GET /sign-in/oidc`` sends the browser to the provider's authorization endpoint with a
fresh ``state`` (the callback's CSRF token), ``nonce`` and PKCE ``code_challenge`` (S256;
RFC 7636, made with authlib), all three kept in the encrypted session cookie. The callback
refuses a ``state`` that is not the one this browser was given, exchanges the code at the
provider's token endpoint (client secret by HTTP Basic, the PKCE verifier) and hands the ID
token and the nonce to the registry (``POST /v1/people/token/oidc``), which verifies the ID
token itself (signature through the provider's JWKS, ``iss``, ``aud``, ``exp``, ``nonce``),
maps it to a registry user and opens a session exactly as a password sign-in does.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from web.settings import WebSettings

#: a sign-in left at the provider longer than this starts again
PENDING_SECONDS = 600


class ProviderError(Exception):
    """The provider could not be reached or answered something unusable."""


@dataclass
class Provider:
    """The provider's endpoints, from its discovery document (fetched once, on first use)."""

    settings: WebSettings
    client: httpx.AsyncClient
    metadata: dict[str, Any] | None = None

    async def endpoints(self) -> dict[str, Any]:
        if self.metadata is None:
            url = self.settings.oidc_issuer.rstrip("/") + "/.well-known/openid-configuration"
            try:
                r = await self.client.get(url)
                r.raise_for_status()
                metadata = r.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise ProviderError(f"discovery failed: {type(exc).__name__}") from exc
            if metadata.get("issuer") != self.settings.oidc_issuer.rstrip("/"):
                raise ProviderError("the discovery document names another issuer")
            self.metadata = metadata
        return self.metadata

    async def start(self, next_page: str) -> tuple[str, dict[str, str]]:
        """The authorization URL to send the browser to, and what the callback must find."""
        endpoints = await self.endpoints()
        pending = {
            "state": generate_token(43),
            "nonce": generate_token(43),
            "verifier": generate_token(64),
            "next": next_page,
            "started": str(int(time.time())),
        }
        query = {
            "response_type": "code",
            "client_id": self.settings.oidc_client_id,
            "redirect_uri": self.settings.oidc_redirect_uri,
            "scope": self.settings.oidc_scope,
            "state": pending["state"],
            "nonce": pending["nonce"],
            "code_challenge": create_s256_code_challenge(pending["verifier"]),
            "code_challenge_method": "S256",
        }
        return f"{endpoints['authorization_endpoint']}?{urlencode(query)}", pending

    async def id_token(self, code: str, verifier: str) -> str:
        """Exchange the authorization code for the ID token (the PKCE verifier proves the start)."""
        endpoints = await self.endpoints()
        try:
            r = await self.client.post(
                endpoints["token_endpoint"],
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": self.settings.oidc_redirect_uri,
                    "code_verifier": verifier,
                    "client_id": self.settings.oidc_client_id,
                },
                auth=(self.settings.oidc_client_id, self.settings.oidc_client_secret),
                headers={"Accept": "application/json"},
            )
            body = r.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderError(f"the token endpoint failed: {type(exc).__name__}") from exc
        if r.status_code != 200 or not isinstance(body, dict) or not body.get("id_token"):
            raise ProviderError(f"the token endpoint refused the code: {r.status_code}")
        return str(body["id_token"])


def pending_ok(pending: dict[str, str] | None, state: str | None, now: float) -> bool:
    """The callback belongs to the sign-in this browser started, recently."""
    if not pending or not state or now - float(pending.get("started", 0)) > PENDING_SECONDS:
        return False
    return hmac.compare_digest(pending.get("state", ""), state)
