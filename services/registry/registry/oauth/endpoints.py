"""OAuth2 client credentials (token endpoint) and the agency's client management."""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import Form, Header, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import Facilitator, OAuthClient, Operator
from registry.oauth.secrets import hash_secret, new_secret, verify_secret
from registry.oauth.service import revoke_access
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, Principal, Role, TokenIssuer
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, Unauthorized, ValidationFailed
from servicekit.outbox import emit
from taxcore.events import registry as ev

router = make_router(prefix="/v1", tags=["oauth"])


class TokenOut(BaseModel):
    access_token: str
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int
    role: str


class ClientCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    role: Role
    operator_id: str | None = Field(default=None, max_length=100)
    facilitator_id: str | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _binding(self) -> ClientCreate:
        if self.role == "operator" and not self.operator_id:
            raise ValueError("an operator client must be bound to operator_id")
        if self.role == "facilitator" and not self.facilitator_id:
            raise ValueError("a facilitator client must be bound to facilitator_id")
        if self.role not in ("operator",) and self.operator_id:
            raise ValueError("operator_id is only for operator clients")
        if self.role not in ("facilitator",) and self.facilitator_id:
            raise ValueError("facilitator_id is only for facilitator clients")
        return self


class ClientOut(BaseModel):
    client_id: str
    name: str
    role: str
    operator_id: str | None
    facilitator_id: str | None
    created_at: datetime
    rotated_at: datetime | None
    revoked_at: datetime | None


class ClientSecretOut(ClientOut):
    client_secret: str = Field(description="shown once; store it now")


def to_out(c: OAuthClient) -> ClientOut:
    return ClientOut(
        client_id=c.client_id,
        name=c.name,
        role=c.role,
        operator_id=c.operator_id,
        facilitator_id=c.facilitator_id,
        created_at=c.created_at,
        rotated_at=c.rotated_at,
        revoked_at=c.revoked_at,
    )


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
    response_model=TokenOut,
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
    client = await session.get(OAuthClient, cid)
    if client is None or client.revoked_at is not None or not verify_secret(secret, client.secret_hash):
        raise Unauthorized("unknown client, wrong secret, or revoked client")
    issuer: TokenIssuer = request.app.state.token_issuer
    access, ttl = issuer.issue(
        Principal(
            client_id=client.client_id,
            role=client.role,
            operator_id=client.operator_id,
            facilitator_id=client.facilitator_id,
        )
    )
    return TokenOut(access_token=access, expires_in=ttl, role=client.role)


async def _event(session: AsyncSession, client: OAuthClient, change: str) -> None:
    await emit(
        session,
        event_type="roomtax.registry.client.changed.v1",
        key=client.client_id,
        data=ev.ClientChanged(
            client_id=client.client_id,
            role=client.role,
            operator_id=client.operator_id,
            facilitator_id=client.facilitator_id,
            change=change,
        ),
    )


async def create_client(
    session: AsyncSession, *, body: ClientCreate, client_id: str | None = None, secret: str | None = None
) -> tuple[OAuthClient, str]:
    if body.operator_id is not None and await session.get(Operator, body.operator_id) is None:
        raise ValidationFailed.on("operator_id", "no operator with this id")
    if body.facilitator_id is not None and await session.get(Facilitator, body.facilitator_id) is None:
        raise ValidationFailed.on("facilitator_id", "no facilitator with this id")
    if (await session.execute(select(OAuthClient).where(OAuthClient.name == body.name))).first():
        raise Conflict(
            f"a client named {body.name!r} exists", errors=[{"pointer": "#/body/name", "detail": "duplicate"}]
        )
    secret = secret or new_secret()
    client = OAuthClient(
        client_id=client_id or "rtx_" + secrets.token_hex(8),
        name=body.name,
        secret_hash=hash_secret(secret),
        role=body.role,
        operator_id=body.operator_id,
        facilitator_id=body.facilitator_id,
    )
    session.add(client)
    await session.flush()
    await session.refresh(client)
    await _event(session, client, "created")
    return client, secret


@router.post(
    "/oauth-clients",
    status_code=201,
    response_model=ClientSecretOut,
    responses={**ValidationFailed.openapi(), **Conflict.openapi()},
    summary="Create an API client bound to a role (and an operator or facilitator)",
)
async def create(body: ClientCreate, session: SessionDep, _: AdminDep) -> ClientSecretOut:
    client, secret = await create_client(session, body=body)
    return ClientSecretOut(**to_out(client).model_dump(), client_secret=secret)


@router.get("/oauth-clients", response_model=list[ClientOut])
async def list_clients(session: SessionDep, _: AdminDep) -> list[ClientOut]:
    rows = (await session.execute(select(OAuthClient).order_by(OAuthClient.created_at))).scalars()
    return [to_out(c) for c in rows]


async def _client(session: AsyncSession, client_id: str) -> OAuthClient:
    client = await session.get(OAuthClient, client_id)
    if client is None:
        raise NotFound(f"no client {client_id!r}")
    if client.revoked_at is not None:
        raise Conflict("the client is revoked")
    return client


@router.post(
    "/oauth-clients/{client_id}/rotate",
    response_model=ClientSecretOut,
    responses={**NotFound.openapi(), **Conflict.openapi()},
    summary="Rotate the client's secret (the old one stops working at once)",
)
async def rotate(client_id: str, session: SessionDep, _: AdminDep) -> ClientSecretOut:
    client = await _client(session, client_id)
    secret = new_secret()
    client.secret_hash = hash_secret(secret)
    client.rotated_at = datetime.now(UTC)
    await session.flush()
    await _event(session, client, "rotated")
    return ClientSecretOut(**to_out(client).model_dump(), client_secret=secret)


@router.post(
    "/oauth-clients/{client_id}/revoke",
    response_model=ClientOut,
    responses={**NotFound.openapi(), **Conflict.openapi()},
    summary="Revoke the client: every service refuses its tokens within seconds",
)
async def revoke(client_id: str, session: SessionDep, principal: AdminDep) -> ClientOut:
    client = await _client(session, client_id)
    client.revoked_at = datetime.now(UTC)
    await session.flush()
    await _event(session, client, "revoked")
    await revoke_access(
        session,
        kind="client",
        subject_id=client.client_id,
        revoked_at=client.revoked_at,
        reason=f"client revoked by {principal.actor}",
    )
    return to_out(client)
