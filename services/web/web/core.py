"""What every page shares: the session, the language, CSRF, rendering, the person."""

from __future__ import annotations

import secrets
import time
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, Form, Header, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment
from markupsafe import Markup

from servicekit.runtime import runtime_of
from web import i18n
from web.backend import ApiError, Backend
from web.session import Person, Session, SessionCodec
from web.settings import WebSettings


class SignInRequired(Exception):  # noqa: N818 - control flow
    """No live session: go to the sign-in page (and come back)."""


class CsrfFailed(Exception):  # noqa: N818 - control flow
    pass


class WrongRole(Exception):  # noqa: N818 - control flow
    pass


def settings_of(request: Request) -> WebSettings:
    s: WebSettings = request.app.state.settings
    return s


def backend_of(request: Request) -> Backend:
    b: Backend = request.app.state.backend
    return b


def codec_of(request: Request) -> SessionCodec:
    c: SessionCodec = request.app.state.codec
    return c


def session_of(request: Request) -> Session:
    s: Session = request.state.session
    return s


def replace_session(request: Request, session: Session | None) -> None:
    """Store a new session (sign-in: a new id) or end it (``None``)."""
    request.state.session = session or Session()
    request.state.session_dirty = True


def lang_of(request: Request) -> i18n.Lang:
    lang: i18n.Lang = request.state.lang
    return lang


def client_address(request: Request) -> str | None:
    return request.client.host if request.client else None


async def check_csrf(
    request: Request,
    csrf_token: Annotated[str | None, Form()] = None,
    x_csrf_token: Annotated[str | None, Header()] = None,
) -> None:
    """Every form posts the session's CSRF token (htmx sends it as a header too)."""
    if not codec_of(request).csrf_ok(session_of(request), csrf_token or x_csrf_token):
        raise CsrfFailed()


CsrfDep = Depends(check_csrf)


async def current_person(request: Request) -> Person:
    """The signed-in person, with an access token renewed at the registry when due.

    The renewal is also the check that the registry session still lives: a session
    ended by sign-out, a password change or a disabled account stops here within
    ``session_check_seconds``.
    """
    session = session_of(request)
    if session.person is None or not session.refresh_token:
        raise SignInRequired()
    settings = settings_of(request)
    now = time.time()
    if now - session.checked_at >= settings.session_check_seconds or session.access_expires - now < 60:
        try:
            renewed = await backend_of(request).post(
                "registry",
                "/v1/people/token/refresh",
                {"refresh_token": session.refresh_token},
                token=None,
            )
        except ApiError as exc:
            if exc.status in (401, 403):
                replace_session(request, None)
                raise SignInRequired() from exc
            raise
        session.access_token = renewed["access_token"]
        session.access_expires = now + int(renewed["expires_in"])
        session.checked_at = now
        request.state.session_dirty = True
    return session.person


PersonDep = Annotated[Person, Depends(current_person)]


async def portal_person(person: PersonDep) -> Person:
    if person.role not in ("operator", "facilitator"):
        raise WrongRole()
    return person


async def agency_person(person: PersonDep) -> Person:
    if not person.is_agency:
        raise WrongRole()
    return person


PortalDep = Annotated[Person, Depends(portal_person)]
AgencyDep = Annotated[Person, Depends(agency_person)]


def token_of(request: Request) -> str:
    token = session_of(request).access_token
    if not token:
        raise SignInRequired()
    return token


class Api:
    """The backend bound to this request's person and language."""

    def __init__(self, request: Request) -> None:
        self.backend = backend_of(request)
        self.token = token_of(request)
        self.lang = lang_of(request).code

    async def get(self, service: str, path: str, **kw: Any) -> Any:
        return await self.backend.get(service, path, token=self.token, lang=self.lang, **kw)

    async def get_or(self, default: Any, service: str, path: str, **kw: Any) -> Any:
        """``get``, or ``default`` where the service answers 404 (assessment has not opened an
        account it has seen no event of yet)."""
        try:
            return await self.get(service, path, **kw)
        except ApiError as exc:
            if exc.status != 404:
                raise
            return default

    async def post(self, service: str, path: str, body: Any, **kw: Any) -> Any:
        return await self.backend.post(service, path, body, token=self.token, lang=self.lang, **kw)

    async def raw(self, method: str, service: str, path: str, **kw: Any) -> Any:
        return await self.backend.request(method, service, path, token=self.token, lang=self.lang, **kw)

    async def download(
        self, service: str, path: str, *, media_type: str, filename: str, **kw: Any
    ) -> Response:
        """A service's file (a PDF, a CSV) handed to the browser as a download."""
        r = await self.raw("GET", service, path, **kw)
        disposition = f'attachment; filename="{filename}"'
        return Response(r.content, media_type=media_type, headers={"Content-Disposition": disposition})


async def api_of(request: Request, _: PersonDep) -> Api:
    return Api(request)


ApiDep = Annotated[Api, Depends(api_of)]


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    env: Environment = request.app.state.templates
    lang = lang_of(request)
    session = session_of(request)
    law = runtime_of(request).law

    def moment(value: str | None, jurisdiction: str | None = None) -> Markup:
        """A moment (ISO 8601 from a service) on ``jurisdiction``'s clock, in a ``<time>``."""
        if not value:
            return Markup("")
        return lang.moment(value, i18n.time_zone(law, jurisdiction, datetime.fromisoformat(value).date()))

    html = env.get_template(template).render(
        request=request,
        lang=lang.code,
        languages=i18n.LANGUAGE_NAMES,
        person=session.person,
        csrf_token=codec_of(request).csrf_token(session),
        form_id=secrets.token_hex(12),
        here=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
        **lang.helpers(),
        fdatetime=moment,  # a moment on the jurisdiction's clock (the law is the app's, not Lang's)
        **context,
    )
    return HTMLResponse(html, status_code=status)


def redirect(url: str, request: Request | None = None) -> Response:
    """303 after a form post; htmx follows ``HX-Redirect`` instead."""
    if request is not None and request.headers.get("hx-request"):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


def sign_in_url(request: Request) -> str:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return "/sign-in?next=" + quote(here, safe="")
