"""What a client or a service discovers about the registry's tokens (no database, no token).

* ``/.well-known/jwks.json``: the public keys tokens are verified with (RFC 7517), the
  signing key and every other configured one (the next key during a rotation);
* ``/.well-known/oauth-authorization-server``: the authorization server's metadata (RFC 8414).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from servicekit.auth import TokenIssuer, jwks, public_keys

router = APIRouter(prefix="/.well-known", tags=["oauth"])

#: keys change only when the registry restarts with new settings; a minute of caching is harmless
CACHE = {"Cache-Control": "public, max-age=60"}


@router.get(
    "/jwks.json",
    summary="The registry's public signing keys (JWKS)",
    description=(
        "Every key a Roomtax access token may be signed with, as a JSON Web Key Set (RFC 7517, "
        "Ed25519 `OKP` keys of RFC 8037); a token's `kid` header names its key. During a rotation "
        "the next key is published before the registry signs with it. Services configured with "
        "`ROOMTAX_JWKS_URL` fetch this document again when they meet an unknown `kid`."
    ),
    responses={200: {"content": {"application/jwk-set+json": {}}}},
)
async def jwks_document(request: Request) -> JSONResponse:
    settings = request.app.state.settings
    issuer: TokenIssuer = request.app.state.token_issuer
    setting = settings.jwt_public_key
    if issuer.kid not in public_keys(setting):
        setting = f"{setting}\n{issuer.public_pem}"
    return JSONResponse(jwks(setting), headers=CACHE)


@router.get(
    "/oauth-authorization-server",
    summary="OAuth 2.0 authorization server metadata (RFC 8414)",
    description=(
        "The issuer, the token endpoint (client credentials, the secret by HTTP Basic or in the "
        "form), the JWKS and the signing algorithm, for clients that configure themselves."
    ),
)
async def metadata(request: Request) -> dict[str, Any]:
    settings = request.app.state.settings
    base = (settings.public_url or str(request.base_url)).rstrip("/")
    return {
        "issuer": settings.jwt_issuer,
        "token_endpoint": f"{base}/v1/oauth/token",
        "jwks_uri": f"{base}/.well-known/jwks.json",
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "token_endpoint_auth_signing_alg_values_supported": ["EdDSA"],
        "response_types_supported": ["token"],
        "scopes_supported": [],
        "service_documentation": f"{base}/docs",
    }
