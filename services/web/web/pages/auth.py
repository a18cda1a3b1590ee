"""Sign-in, sign-out, password change, and the language switch."""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from web import i18n
from web.backend import ApiError
from web.core import (
    ApiDep,
    CsrfDep,
    PersonDep,
    backend_of,
    client_address,
    lang_of,
    redirect,
    render,
    replace_session,
    session_of,
    settings_of,
)
from web.oidc import Provider, ProviderError, pending_ok
from web.security import safe_next
from web.session import Person

router = APIRouter()
log = logging.getLogger("web.auth")


def home_of(person: Person | None) -> str:
    if person is None:
        return "/sign-in"
    return "/agency" if person.is_agency else "/portal"


@router.get("/")
async def home(request: Request) -> Response:
    return redirect(home_of(session_of(request).person))


def provider_of(request: Request) -> Provider | None:
    provider: Provider | None = request.app.state.oidc
    return provider


def sign_in_page(request: Request, status: int = 200, **context: Any) -> Response:
    provider = provider_of(request)
    name = settings_of(request).oidc_name if provider is not None else None
    return render(request, "sign_in.html", status, provider_name=name, **context)


def open_session(request: Request, body: dict[str, Any]) -> Person:
    """The registry opened a session (``SessionOut``): a new web session (a new id) holds it."""
    user = body["user"]
    person = Person(
        user_id=user["id"],
        name=user["name"],
        email=user["email"],
        role=user["role"],
        operator_id=user["operator_id"],
        facilitator_id=user["facilitator_id"],
    )
    replace_session(
        request,
        session_of(request).signed_in(
            person, access=body["access_token"], expires_in=body["expires_in"], refresh=body["refresh_token"]
        ),
    )
    return person


@router.get("/sign-in")
async def sign_in_form(request: Request, next: str | None = None) -> Response:
    return sign_in_page(request, next=safe_next(next, ""), email="", errors={})


@router.post("/sign-in", dependencies=[CsrfDep])
async def sign_in(
    request: Request,
    email: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    errors: dict[str, str] = {}
    if not email.strip():
        errors["email"] = _("Enter your e-mail address.")
    if not password:
        errors["password"] = _("Enter your password.")
    if errors:
        return sign_in_page(request, 422, next=safe_next(next, ""), email=email, errors=errors)
    try:
        body = await backend_of(request).post(
            "registry",
            "/v1/people/token",
            {"email": email, "password": password},
            token=None,
            lang=lang_of(request).code,
            forwarded_for=client_address(request),
        )
    except ApiError as exc:
        if exc.status == 429:
            message, status = _("Too many failed attempts. Wait 15 minutes and try again."), 429
        elif exc.status in (401, 422):
            message, status = _("The e-mail address or the password is not right."), 401
        else:
            raise
        return sign_in_page(request, status, next=safe_next(next, ""), email=email, errors={"_form": message})
    person = open_session(request, body)
    return redirect(safe_next(next, home_of(person)))


@router.get("/sign-in/oidc")
async def oidc_start(request: Request, next: str | None = None) -> Response:
    """Off to the identity provider, with a fresh state, nonce and PKCE challenge."""
    provider = provider_of(request)
    if provider is None:
        raise StarletteHTTPException(404)
    try:
        url, pending = await provider.start(safe_next(next, ""))
    except ProviderError as exc:
        log.warning("OpenID Connect provider unusable: %s", exc)
        return oidc_refused(request, 502)
    session_of(request).oidc = pending
    request.state.session_dirty = True
    return RedirectResponse(url, status_code=303)


def oidc_refused(request: Request, status: int) -> Response:
    _ = lang_of(request).gettext
    if status == 403:
        title = _("No account for this person")
        message = _(
            "The sign-in worked, but no Roomtax account belongs to this person. "
            "Ask the agency to create one for your e-mail address."
        )
    elif status == 400:
        title = _("This sign-in did not start here")
        message = _("The sign-in expired or was started in another window. Sign in again.")
    elif status == 502:
        title = _("The sign-in service is unavailable")
        message = _("The agency's sign-in service could not be reached. Try again in a few minutes.")
    else:
        title = _("The sign-in could not be verified")
        message = _("The answer of the agency's sign-in service was not accepted. Sign in again.")
    return render(request, "error.html", status, title=title, message=message)


@router.get("/sign-in/oidc/callback")
async def oidc_callback(
    request: Request, code: str | None = None, state: str | None = None, error: str | None = None
) -> Response:
    provider = provider_of(request)
    if provider is None:
        raise StarletteHTTPException(404)
    session = session_of(request)
    pending, session.oidc = session.oidc, None  # one use only
    request.state.session_dirty = True
    if pending is None or not pending_ok(pending, state, time.time()):
        return oidc_refused(request, 400)
    if error or not code:
        return oidc_refused(request, 401)
    try:
        id_token = await provider.id_token(code, pending["verifier"])
        body = await backend_of(request).post(
            "registry",
            "/v1/people/token/oidc",
            {"id_token": id_token, "nonce": pending["nonce"]},
            token=None,
            lang=lang_of(request).code,
            forwarded_for=client_address(request),
        )
    except ProviderError as exc:
        log.warning("OpenID Connect code exchange failed: %s", exc)
        return oidc_refused(request, 401)
    except ApiError as exc:
        if exc.status not in (401, 403):
            raise
        log.info("OpenID Connect sign-in refused by the registry: %s", exc.detail)
        return oidc_refused(request, exc.status)
    person = open_session(request, body)
    return redirect(safe_next(pending.get("next"), home_of(person)))


@router.post("/sign-out", dependencies=[CsrfDep])
async def sign_out(request: Request) -> Response:
    session = session_of(request)
    if session.refresh_token:
        try:
            await backend_of(request).post(
                "registry", "/v1/people/sign-out", {"refresh_token": session.refresh_token}, token=None
            )
        except ApiError:
            pass  # the cookie goes anyway; the registry session then ends at its expiry
    replace_session(request, None)
    return redirect("/sign-in")


@router.get("/account/password")
async def password_form(request: Request, person: PersonDep) -> Response:
    return render(request, "password.html", errors={}, done=False)


@router.post("/account/password", dependencies=[CsrfDep])
async def change_password(
    request: Request,
    person: PersonDep,
    api: ApiDep,
    current_password: Annotated[str, Form()] = "",
    new_password: Annotated[str, Form()] = "",
    confirm_password: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    errors: dict[str, str] = {}
    if len(new_password) < 12:
        errors["new_password"] = _("Use at least 12 characters.")
    elif new_password != confirm_password:
        errors["confirm_password"] = _("The two new passwords differ.")
    if not current_password:
        errors["current_password"] = _("Enter your current password.")
    if not errors:
        try:
            body = await api.post(
                "registry",
                "/v1/people/me/password",
                {"current_password": current_password, "new_password": new_password},
                forwarded_for=client_address(request),
            )
        except ApiError as exc:
            if exc.status != 422:
                raise
            fields = exc.field_errors()
            if "current_password" in fields:
                errors["current_password"] = _("This is not your current password.")
            else:
                errors["new_password"] = _("Choose another password.")
        else:
            open_session(request, body)
            return render(request, "password.html", errors={}, done=True)
    return render(request, "password.html", 422, errors=errors, done=False)


@router.post("/language", dependencies=[CsrfDep])
async def language(
    request: Request, to: Annotated[str, Form()] = "en", next: Annotated[str, Form()] = "/"
) -> Response:
    response = redirect(safe_next(next))
    if to in i18n.LANGUAGES:
        settings = request.app.state.settings
        response.set_cookie(
            i18n.COOKIE,
            to,
            max_age=365 * 24 * 3600,
            httponly=True,
            secure=settings.cookie_secure,
            samesite="lax",
        )
    return response
