"""Sign-in through an external OpenID Connect provider: the registry trusts its ID tokens.

The web app runs the authorization-code flow with PKCE, checks the ``state`` of the
callback and holds the ``nonce``; it hands the ID token it received from the provider's
token endpoint and that nonce to ``POST /v1/people/token/oidc``. The registry, which
issues Roomtax tokens, verifies the ID token itself and does not take the web app's word:
the signature with a key of the provider's JWKS (its discovery document's ``jwks_uri``),
``iss``, ``aud`` (and ``azp`` when there are several audiences), ``exp``, ``iat`` and the
``nonce``; the nonce is then used up (``oidc_used_nonces``, until the token expires), so
the same ID token never signs in twice. At a person's first sign-in the claim
``oidc_user_claim`` (``email`` by default) finds the registry user by e-mail address
(``email_verified: false`` is refused) and binds that user to the provider's ``sub``
(``oidc_identities``); from then on the user is found by ``sub`` alone, so an address
changed at the provider cannot name another account. No account is ever created from an
ID token: the agency creates people, the provider only proves who signs in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from servicekit.errors import Unauthorized

#: asymmetric algorithms only: a shared-secret (HS*) ID token could be forged by any client
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
LEEWAY_SECONDS = 60


class IssuerKeys:
    """The provider's signing keys, fetched on first use and again when a token names a key
    id not seen yet (at most once per ``min_refresh_seconds``), so the provider rotates keys
    without a restart here."""

    def __init__(self, issuer: str, *, min_refresh_seconds: float = 30.0, timeout: float = 5.0) -> None:
        self.issuer = issuer.rstrip("/")
        self.min_refresh = min_refresh_seconds
        self.timeout = timeout
        self._keys: KeySet | None = None
        self._kids: set[str] = set()
        self._fetched_at = float("-inf")

    async def _fetch(self) -> None:
        self._fetched_at = time.monotonic()
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            discovery = await client.get(f"{self.issuer}/.well-known/openid-configuration")
            discovery.raise_for_status()
            jwks = await client.get(discovery.json()["jwks_uri"])
            jwks.raise_for_status()
        self._keys = KeySet.import_key_set(jwks.json())
        self._kids = {str(k.kid) for k in self._keys.keys if k.kid}

    async def key_set(self, kid: str | None) -> KeySet:
        stale = self._keys is None or (kid is not None and kid not in self._kids)
        if stale and time.monotonic() - self._fetched_at >= self.min_refresh:
            try:
                await self._fetch()
            except (httpx.HTTPError, ValueError, KeyError, JoseError) as exc:
                raise Unauthorized(
                    f"the identity provider's keys could not be fetched: {type(exc).__name__}"
                ) from exc
        if self._keys is None:
            raise Unauthorized("the identity provider's keys are not known yet")
        return self._keys


def _kid(id_token: str) -> str | None:
    try:
        kid = jws.extract_compact(id_token.encode()).protected.get("kid")
    except (JoseError, ValueError):
        return None
    return str(kid) if kid else None


async def verify_id_token(
    id_token: str, *, keys: IssuerKeys, audience: str, nonce: str, now: float | None = None
) -> dict[str, Any]:
    """The ID token's claims once signature, ``iss``, ``aud``, ``azp``, ``exp``, ``iat`` and
    ``nonce`` all hold; otherwise :class:`Unauthorized` naming what failed."""
    key_set = await keys.key_set(_kid(id_token))
    try:
        token = jwt.decode(id_token, key_set, algorithms=list(ALGORITHMS))
    except JoseError as exc:
        raise Unauthorized(f"the ID token's signature does not verify: {exc.error}") from exc
    claims: dict[str, Any] = dict(token.claims)
    registry = jwt.JWTClaimsRegistry(
        now=int(now if now is not None else time.time()),
        leeway=LEEWAY_SECONDS,
        iss={"essential": True, "value": keys.issuer},
        aud={"essential": True, "value": audience},
        exp={"essential": True},
        iat={"essential": True},
        sub={"essential": True},
        nonce={"essential": True, "value": nonce},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise Unauthorized(f"the ID token is not valid here: {exc.description or exc.error}") from exc
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != audience:
        raise Unauthorized("the ID token is not valid here: azp does not name this client")
    return claims


@dataclass(frozen=True)
class ExternalIdentity:
    """What a verified ID token says: the provider and its subject (``sub``), the nonce it was
    issued for, until when it is valid, and the claim's value that finds the user the first time
    (``email``; None when absent or not verified)."""

    issuer: str
    subject: str
    nonce: str
    valid_until: datetime
    email: str | None

    @classmethod
    def of(cls, claims: dict[str, Any], *, claim: str) -> ExternalIdentity:
        """From the claims :func:`verify_id_token` returned (so ``iss``, ``sub``, ``nonce`` and
        ``exp`` are there); the token stays valid until ``exp`` plus the leeway."""
        return cls(
            issuer=str(claims["iss"]),
            subject=str(claims["sub"]),
            nonce=str(claims["nonce"]),
            valid_until=datetime.fromtimestamp(int(claims["exp"]) + LEEWAY_SECONDS, UTC),
            email=person_of(claims, claim),
        )


def person_of(claims: dict[str, Any], claim: str) -> str | None:
    """The e-mail address that names the registry user, or None (absent, or not verified)."""
    value = claims.get(claim)
    if not isinstance(value, str) or not value.strip():
        return None
    if claim == "email" and claims.get("email_verified") is False:
        return None
    return value.strip().lower()
