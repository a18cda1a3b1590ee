"""People: sign-in (``/v1/people/token``), renewal, sign-out, password change, and the
agency administrator's management of user accounts."""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from registry.settings import RegistrySettings
from registry.users import repository, service
from registry.users.oidc import ExternalIdentity, IssuerKeys, verify_id_token
from registry.users.schemas import (
    AccessOut,
    ExternalSignIn,
    PasswordChange,
    PersonName,
    RefreshIn,
    SessionOut,
    SignIn,
    UserCreate,
    UserOut,
)
from registry.users.service import NoAccount, TooManyAttempts
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, Principal, PrincipalDep, TokenIssuer, require_roles
from servicekit.db import SessionDep
from servicekit.errors import Conflict, DomainError, Forbidden, NotFound, Unauthorized, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.runtime import runtime_of

router = make_router(prefix="/v1/people", tags=["people"])
# Sign-in and password change run their own transaction: a refused attempt is committed
# (the throttle counts it) before the refusal is answered.
attempts = APIRouter(prefix="/v1/people", tags=["people"])
StaffReadDep = Annotated[Principal, Depends(require_roles("agency-admin", "agency-auditor"))]
#: the staff who work and review cases read names (not the read-only dashboard, not taxpayers)
StaffNamesDep = Annotated[
    Principal, Depends(require_roles("agency-admin", "agency-officer", "agency-auditor"))
]
MAX_NAMES = 100


def _now(request: Request) -> datetime:
    """The instant of the app's runtime clock (:mod:`servicekit.runtime`)."""
    return runtime_of(request).now()


def client_ip(request: Request) -> str | None:
    """The address that is signing in: the peer, or the ``X-Forwarded-For`` address just
    before our trusted proxies (the web app is one), never a value an untrusted peer wrote."""
    settings: RegistrySettings = request.app.state.settings
    trusted = [
        ipaddress.ip_network(n.strip(), strict=False) for n in settings.trusted_proxies.split(",") if n
    ]
    peer = request.client.host if request.client else None
    chain = [h.strip() for h in request.headers.get("x-forwarded-for", "").split(",") if h.strip()]
    address = peer
    for hop in [*reversed(chain)]:
        try:
            if address is None or not any(ipaddress.ip_address(address) in n for n in trusted):
                break
        except ValueError:
            break
        address = hop
    return address


def _issuer(request: Request) -> TokenIssuer:
    issuer: TokenIssuer = request.app.state.token_issuer
    return issuer


def _person(principal: Principal) -> str:
    if principal.user_id is None:
        raise Forbidden("this token belongs to an API client, not to a person")
    return principal.user_id


@attempts.post(
    "/token",
    responses={**Unauthorized.openapi(), **TooManyAttempts.openapi(), **ValidationFailed.openapi()},
    summary="A person signs in with e-mail and password: an access token and a session",
)
async def sign_in(body: SignIn, request: Request) -> SessionOut:
    settings: RegistrySettings = request.app.state.settings
    return await _committed(
        request,
        lambda session: service.sign_in(
            session,
            email=body.email,
            password=body.password,
            ip=client_ip(request),
            issuer=_issuer(request),
            throttle=service.Throttle.of(settings),
            session_hours=settings.person_session_hours,
            now=_now(request),
        ),
    )


async def _committed(
    request: Request, use_case: Callable[[SessionDep], Awaitable[SessionOut | DomainError]]
) -> SessionOut:
    """Run a sign-in use-case in its own transaction, committed before a refusal is raised
    (so the attempt it recorded stays, and the throttle counts it)."""
    async with request.app.state.sessionmaker() as session, session.begin():
        result = await use_case(session)
    if isinstance(result, DomainError):
        raise result
    return result


def _oidc_keys(request: Request) -> IssuerKeys:
    settings: RegistrySettings = request.app.state.settings
    if not settings.oidc_issuer:
        raise NotFound("sign-in through an OpenID Connect provider is not configured")
    keys: IssuerKeys | None = getattr(request.app.state, "oidc_keys", None)
    if keys is None or keys.issuer != settings.oidc_issuer.rstrip("/"):
        keys = request.app.state.oidc_keys = IssuerKeys(settings.oidc_issuer)
    return keys


@attempts.post(
    "/token/oidc",
    responses={**Unauthorized.openapi(), **NoAccount.openapi(), **NotFound.openapi()},
    summary="A person signed in at the agency's OpenID Connect provider: an access token and a session",
    description=(
        "The web app sends the ID token it got from the provider's token endpoint (authorization "
        "code with PKCE) and the nonce it sent. The registry verifies the ID token itself (signature "
        "by the provider's JWKS, `iss`, `aud`, `exp`, `nonce`) and uses the nonce up: the same ID "
        "token presented again is refused (401 id-token-already-used). A person's first sign-in finds "
        "the user by the claim `oidc_user_claim` (e-mail address) and binds them to the provider's "
        "`sub`; later sign-ins find the user by `sub` alone. It never creates a user."
    ),
)
async def sign_in_oidc(body: ExternalSignIn, request: Request) -> SessionOut:
    settings: RegistrySettings = request.app.state.settings
    claims = await verify_id_token(
        body.id_token, keys=_oidc_keys(request), audience=settings.oidc_audience, nonce=body.nonce
    )
    return await _committed(
        request,
        lambda session: service.sign_in_external(
            session,
            who=ExternalIdentity.of(claims, claim=settings.oidc_user_claim),
            ip=client_ip(request),
            issuer=_issuer(request),
            session_hours=settings.person_session_hours,
            now=_now(request),
        ),
    )


@attempts.post(
    "/me/password",
    responses={**Unauthorized.openapi(), **Forbidden.openapi(), **ValidationFailed.openapi()},
    summary="Change one's own password: every session ends, a new one is returned",
)
async def change_password(body: PasswordChange, request: Request, principal: PrincipalDep) -> SessionOut:
    settings: RegistrySettings = request.app.state.settings
    user_id = _person(principal)
    return await _committed(
        request,
        lambda session: service.change_password(
            session,
            user_id=user_id,
            current=body.current_password,
            new=body.new_password,
            ip=client_ip(request),
            issuer=_issuer(request),
            session_hours=settings.person_session_hours,
            now=_now(request),
        ),
    )


@router.post(
    "/token/refresh",
    responses=Unauthorized.openapi(),
    summary="Renew the access token of a live session",
)
async def refresh(body: RefreshIn, request: Request, session: SessionDep) -> AccessOut:
    return await service.refresh(
        session, refresh_token=body.refresh_token, issuer=_issuer(request), now=_now(request)
    )


@router.post("/sign-out", status_code=204, summary="End the session (its revocation is recorded)")
async def sign_out(body: RefreshIn, request: Request, session: SessionDep) -> None:
    await service.sign_out(session, refresh_token=body.refresh_token, now=_now(request))


@router.get("/me", responses=Forbidden.openapi(), summary="The signed-in person")
async def me(session: SessionDep, principal: PrincipalDep) -> UserOut:
    return service.to_out(await service.get_user(session, user_id=_person(principal)))


@router.post(
    "/users",
    status_code=201,
    responses={**ValidationFailed.openapi(), **Conflict.openapi(), **Forbidden.openapi()},
    summary="The agency administrator creates a person's account",
)
async def create_user(body: UserCreate, session: SessionDep, principal: AdminDep) -> UserOut:
    return service.to_out(await service.create_user(session, body=body, by=principal.actor))


@router.get("/users", summary="Every person's account (agency staff)")
async def list_users(
    session: SessionDep, _: StaffReadDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[UserOut]:
    after = decode_cursor(cursor, arity=1)
    rows = await repository.listing(session, limit=limit, after=after[0] if after else None)
    return paginate(rows, limit=limit, key=lambda u: [u.id], to_item=service.to_out)


@router.get(
    "/names",
    summary="The names of agency-recorded people (who proposed, approved, decided), by user id",
)
async def people_names(
    session: SessionDep,
    _: StaffNamesDep,
    user_id: Annotated[
        list[str], Query(min_length=1, max_length=MAX_NAMES, description="repeat: at most 100")
    ],
) -> list[PersonName]:
    """Only the id and the name: agency staff see who did what without reading the accounts
    (e-mail, role, sign-in history stay with the administrator and the auditor). An unknown
    id is absent."""
    return [PersonName(id=u.id, name=u.name) for u in await repository.by_ids(session, user_id)]


@router.get("/users/{user_id}", responses=NotFound.openapi())
async def get_user(user_id: str, session: SessionDep, _: StaffReadDep) -> UserOut:
    return service.to_out(await service.get_user(session, user_id=user_id))


@router.post(
    "/users/{user_id}/disable",
    responses={**NotFound.openapi(), **Conflict.openapi()},
    summary="Disable an account: its sessions end at once, its access tokens within their lifetime",
)
async def disable_user(user_id: str, request: Request, session: SessionDep, principal: AdminDep) -> UserOut:
    return service.to_out(
        await service.disable_user(session, user_id=user_id, by=principal.actor, now=_now(request))
    )
