"""OAuth2 client credentials (token endpoint) and the agency's client management."""

from __future__ import annotations

import base64
from typing import Annotated

from fastapi import Form, Header, Request

from registry.models import OAuthClient
from registry.oauth import repository, service
from registry.oauth.schemas import ClientCreate, ClientOut, ClientSecretOut, TokenOut
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, TokenIssuer
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, Unauthorized, ValidationFailed
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1", tags=["oauth"])


def to_out(c: OAuthClient) -> ClientOut:
    return ClientOut.model_validate(c, from_attributes=True)


def _basic(authorization: str | None) -> tuple[str, str] | None:
    if not authorization or not authorization.lower().startswith("basic "):
        return None
    try:
        raw = base64.b64decode(authorization[6:]).decode()
        cid, _, secret = raw.partition(":")
        return cid, secret
    except ValueError:
        return None


@router.post(
    "/oauth/token",
    responses=Unauthorized.openapi(),
    summary="OAuth2 client credentials: exchange a client id and secret for an access token",
)
async def token(
    request: Request,
    session: SessionDep,
    grant_type: Annotated[str, Form(max_length=100)],
    client_id: Annotated[str | None, Form(max_length=100)] = None,
    client_secret: Annotated[str | None, Form(max_length=200)] = None,
    authorization: Annotated[str | None, Header()] = None,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> TokenOut:
    if idempotency_key is not None:
        # A stored response would be replayed to whoever sends the key again: with HTTP
        # Basic credentials (no Bearer token) every caller shares one idempotency scope,
        # so a replay would hand this client's access token to a caller without secrets.
        raise ValidationFailed.on(
            "Idempotency-Key", "is not accepted here: ask for a new token instead", root="header"
        )
    if grant_type != "client_credentials":
        raise ValidationFailed.on("grant_type", "only client_credentials is supported")
    creds = _basic(authorization) or (client_id, client_secret)
    cid, secret = creds
    if not cid or not secret:
        raise Unauthorized("client_id and client_secret are required (form fields or HTTP Basic)")
    principal = await service.authenticate(session, client_id=cid, secret=secret)
    issuer: TokenIssuer = request.app.state.token_issuer
    access, ttl = issuer.issue(principal)
    return TokenOut(access_token=access, expires_in=ttl, role=principal.role)


@router.post(
    "/oauth-clients",
    status_code=201,
    responses={**ValidationFailed.openapi(), **Conflict.openapi()},
    summary="Create an API client bound to a role (and an operator or facilitator)",
)
async def create(body: ClientCreate, session: SessionDep, _: AdminDep) -> ClientSecretOut:
    client, secret = await service.create_client(session, body=body)
    return ClientSecretOut(**to_out(client).model_dump(), client_secret=secret)


@router.get("/oauth-clients")
async def list_clients(session: SessionDep, _: AdminDep) -> list[ClientOut]:
    return [to_out(c) for c in await repository.all_clients(session)]


@router.post(
    "/oauth-clients/{client_id}/rotate",
    responses={**NotFound.openapi(), **Conflict.openapi()},
    summary="Rotate the client's secret (the old one stops working at once)",
)
async def rotate(client_id: str, session: SessionDep, _: AdminDep, runtime: RuntimeDep) -> ClientSecretOut:
    client, secret = await service.rotate_client(session, client_id=client_id, now=runtime.now())
    return ClientSecretOut(**to_out(client).model_dump(), client_secret=secret)


@router.post(
    "/oauth-clients/{client_id}/revoke",
    responses={**NotFound.openapi(), **Conflict.openapi()},
    summary="Revoke the client: every service refuses its tokens within seconds",
)
async def revoke(client_id: str, session: SessionDep, principal: AdminDep, runtime: RuntimeDep) -> ClientOut:
    client = await service.revoke_client(session, client_id=client_id, by=principal.actor, now=runtime.now())
    return to_out(client)
