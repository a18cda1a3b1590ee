"""OAuth2 client credentials and JWT verification.

The registry hosts ``/v1/oauth/token`` and signs short-lived access tokens
with its Ed25519 private key; every service verifies them locally with the
public key. A token carries the client's role and the operator or facilitator
it is bound to. Roles:

- ``agency-admin``: everything;
- ``agency-officer``: read everything; works cases (assessment's maker-checker settings say
  what an officer may propose and approve);
- ``agency-auditor``: read everything;
- ``dashboard``: read-only, everything;
- ``operator``: its own lodgings (``operator_id``);
- ``facilitator``: the lodgings that authorized it (``facilitator_id``).
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from jwt.algorithms import OKPAlgorithm

from servicekit.errors import Forbidden, Unauthorized

if TYPE_CHECKING:
    from servicekit.revocations import Denylist

Role = Literal["agency-admin", "agency-officer", "agency-auditor", "dashboard", "operator", "facilitator"]
ROLES: tuple[Role, ...] = (
    "agency-admin",
    "agency-officer",
    "agency-auditor",
    "dashboard",
    "operator",
    "facilitator",
)
#: agency-officer: staff who work cases (read all; propose and approve case work within the
#: service's approval threshold, never their own proposal); agency-auditor and dashboard read only.
AGENCY_ROLES: frozenset[str] = frozenset({"agency-admin", "agency-officer", "agency-auditor", "dashboard"})
ALGORITHM = "EdDSA"
#: seconds of clock skew tolerated on ``exp``/``nbf``/``iat``
LEEWAY_SECONDS = 5
#: verified tokens remembered (their signature not checked again until they expire)
VERIFIED_TOKENS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the OAuth client, its role and what it is bound to.

    ``user_id`` names the person when a person (a registry user signed in through the
    web app) holds the token; every write is attributed to ``actor``. ``session_id`` (the
    token's ``sid`` claim) names the person's sign-in session: signing out ends that
    session, and every service refuses its tokens within seconds.
    """

    client_id: str
    role: str
    operator_id: str | None = None
    facilitator_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None

    @property
    def actor(self) -> str:
        """Who did it, for audit trails: the person when there is one, else the client."""
        return f"user:{self.user_id}" if self.user_id else f"client:{self.client_id}"

    @property
    def is_agency(self) -> bool:
        return self.role in AGENCY_ROLES

    @property
    def can_write_all(self) -> bool:
        return self.role == "agency-admin"


PEM_BLOCK = re.compile(r"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----", re.S)


def key_id(public_pem: str) -> str:
    """A key's id (``kid``): the first 16 hex digits of the SHA-256 of its DER encoding."""
    key = serialization.load_pem_public_key(public_pem.encode())
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[:16]


def jwks(setting: str) -> dict[str, Any]:
    """The public keys of a setting as a JSON Web Key Set (RFC 7517; Ed25519 keys, RFC 8037)."""
    keys = []
    for kid, pem in public_keys(setting).items():
        key = serialization.load_pem_public_key(pem.encode())
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"key {kid} is not an Ed25519 key")
        jwk = OKPAlgorithm.to_jwk(key, as_dict=True)
        keys.append({**jwk, "kid": kid, "use": "sig", "alg": ALGORITHM})
    return {"keys": keys}


def public_keys(setting: str) -> dict[str, str]:
    """Every public key of a setting that may hold several PEM blocks, by key id.

    Rotation: publish the new public key next to the old one on every service, then
    switch the registry to the new private key; drop the old public key once the
    last token signed with it has expired (``token_ttl_seconds``).
    """
    blocks = PEM_BLOCK.findall(setting)
    if not blocks:
        raise ValueError("ROOMTAX_JWT_PUBLIC_KEY holds no PEM public key")
    return {key_id(b): b for b in blocks}


class TokenIssuer:
    def __init__(self, private_key: str, *, issuer: str, audience: str, ttl_seconds: int) -> None:
        self._key = private_key
        private = serialization.load_pem_private_key(private_key.encode(), password=None)
        public_pem = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.public_pem = public_pem.decode()
        self.kid = key_id(self.public_pem)
        self.issuer = issuer
        self.audience = audience
        self.ttl = ttl_seconds

    def issue(self, principal: Principal, *, now: float | None = None) -> tuple[str, int]:
        issued = int(now if now is not None else time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": principal.client_id,
            "iat": issued,
            "nbf": issued,
            "exp": issued + self.ttl,
            "jti": uuid.uuid4().hex,
            "role": principal.role,
        }
        if principal.operator_id:
            claims["operator_id"] = principal.operator_id
        if principal.facilitator_id:
            claims["facilitator_id"] = principal.facilitator_id
        if principal.user_id:
            claims["user_id"] = principal.user_id
        if principal.session_id:
            claims["sid"] = principal.session_id
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"kid": self.kid}), self.ttl


class TokenVerifier:
    """Verifies tokens locally with the public key(s): several during a key rotation.

    With a ``denylist`` (every service's API has one, :mod:`servicekit.revocations`), a
    token issued to a client or person before it was revoked is refused, and so is a token
    of a person's sign-in session (``sid``) that has ended.

    With a ``jwks_url`` (the registry's ``/.well-known/jwks.json``) the keys published
    there are trusted too: fetched at start-up and again when a token names a key id this
    service does not know (at most once per ``jwks_min_refresh_seconds``), so the registry
    rotates its signing key without a redeploy of the other services.
    """

    def __init__(
        self,
        public_key: str,
        *,
        issuer: str,
        audience: str,
        denylist: Denylist | None = None,
        jwks_url: str = "",
        jwks_min_refresh_seconds: float = 30.0,
    ) -> None:
        self._configured: dict[str, Any] = public_keys(public_key) if public_key.strip() else {}
        self._keys: dict[str, Any] = dict(self._configured)
        self.issuer = issuer
        self.audience = audience
        self.denylist = denylist
        self.jwks_url = jwks_url
        self.jwks_min_refresh = jwks_min_refresh_seconds
        self._fetched_at = float("-inf")
        #: token -> (principal, exp, iat) of tokens verified lately: the signature and the
        #: claims are checked once per token, its expiry and revocation on every request
        self._verified: dict[str, tuple[Principal, float, float]] = {}

    @property
    def key_ids(self) -> frozenset[str]:
        return frozenset(self._keys)

    async def refresh(self) -> None:
        """Trust the configured keys and those the JWKS publishes now (a dropped key is dropped)."""
        if not self.jwks_url:
            return
        self._fetched_at = time.monotonic()
        async with httpx.AsyncClient(timeout=5.0) as client:
            response = await client.get(self.jwks_url)
            response.raise_for_status()
        published = jwt.PyJWKSet.from_dict(response.json())
        self._keys = {**self._configured, **{k.key_id: k.key for k in published.keys if k.key_id}}
        self._verified.clear()  # a dropped key's tokens are refused from now on

    async def verify_fresh(self, token: str) -> Principal:
        """:meth:`verify`, after fetching the JWKS again if the token names an unknown key."""
        if self.jwks_url and time.monotonic() - self._fetched_at >= self.jwks_min_refresh:
            try:
                kid = jwt.get_unverified_header(token).get("kid")
            except jwt.PyJWTError:
                kid = None
            if kid and kid not in self._keys:
                try:
                    await self.refresh()
                except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
                    raise Unauthorized(
                        f"the signing keys could not be fetched: {type(exc).__name__}"
                    ) from exc
        return self.verify(token)

    def verify(self, token: str) -> Principal:
        seen = self._verified.get(token)
        if seen is not None and time.time() < seen[1] + LEEWAY_SECONDS:
            self._refuse_revoked(seen[0], seen[2])
            return seen[0]
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = self._keys.get(kid) if kid else next(iter(self._keys.values()))
            if key is None:
                raise Unauthorized("the access token is signed with a key this service does not trust")
            claims = jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "iat", "sub", "aud", "iss"]},
                leeway=LEEWAY_SECONDS,
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("the access token has expired") from exc
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"invalid access token: {exc}") from exc
        role = claims.get("role")
        if role not in ROLES:
            raise Unauthorized("the access token carries no known role")
        principal = Principal(
            client_id=str(claims["sub"]),
            role=str(role),
            operator_id=claims.get("operator_id"),
            facilitator_id=claims.get("facilitator_id"),
            user_id=claims.get("user_id"),
            session_id=claims.get("sid"),
        )
        self._refuse_revoked(principal, float(claims["iat"]))
        if len(self._verified) >= VERIFIED_TOKENS_KEPT:
            self._verified.clear()
        self._verified[token] = (principal, float(claims["exp"]), float(claims["iat"]))
        return principal

    def _refuse_revoked(self, principal: Principal, issued_at: float) -> None:
        if self.denylist is not None and (
            why := self.denylist.refuses(
                client_id=principal.client_id,
                user_id=principal.user_id,
                session_id=principal.session_id,
                issued_at=issued_at,
            )
        ):
            raise Unauthorized(why)


def bearer_token(request: Request) -> str | None:
    """The token of the request's ``Authorization: Bearer ...`` header, read as
    :class:`~fastapi.security.HTTPBearer` reads it, or None."""
    scheme, _, param = (request.headers.get("authorization") or "").partition(" ")
    token = param.strip()
    return token if scheme.lower() == "bearer" and token else None


_bearer = HTTPBearer(auto_error=False, description="OAuth2 client-credentials access token")


async def get_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller (``async def``: verifying takes ~0.2 ms, less than a threadpool hop); the
    token is verified once per request (the idempotency check may have verified it first)."""
    verified = getattr(request.state, "principal", None)
    if isinstance(verified, Principal):
        return verified
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("a Bearer access token is required (POST /v1/oauth/token at the registry)")
    verifier: TokenVerifier = request.app.state.token_verifier
    return await verifier.verify_fresh(credentials.credentials)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def require_roles(*roles: str) -> Callable[..., Coroutine[Any, Any, Principal]]:
    """Dependency factory: the caller must hold one of ``roles``."""

    allowed = frozenset(roles)

    async def dependency(principal: PrincipalDep) -> Principal:
        if principal.role not in allowed:
            raise Forbidden(f"role {principal.role!r} may not do this; needs one of {sorted(allowed)}")
        return principal

    return dependency


AdminDep = Annotated[Principal, Depends(require_roles("agency-admin"))]
AgencyReadDep = Annotated[Principal, Depends(require_roles(*AGENCY_ROLES))]
