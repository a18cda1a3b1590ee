"""The web application: an agency console and a taxpayer portal over the public APIs."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.exceptions import HTTPException as StarletteHTTPException

from servicekit import telemetry
from servicekit.runtime import Runtime
from web import i18n
from web.backend import ApiError, Backend
from web.core import CsrfFailed, SignInRequired, WrongRole, redirect, render, sign_in_url
from web.oidc import Provider
from web.pages import agency, answers, auth, casework, distribution, plans, portal
from web.security import security_headers
from web.session import Session, SessionCodec
from web.settings import WebSettings

HERE = Path(__file__).resolve().parent
#: an idle pooled connection is dropped before the services' servers drop it (uvicorn closes
#: idle keep-alive connections after 5 s; httpx's default keeps them 5 s too, so a page could
#: reuse one the service was closing and get "Server disconnected without sending a response")
BACKEND_LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=2.0)
log = logging.getLogger("web")


def templates() -> Environment:
    return Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html", "svg"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def build_app(
    settings: WebSettings | None = None,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    runtime: Runtime | None = None,
) -> FastAPI:
    """``transport`` lets tests route the backend calls to in-process services. ``runtime``: the
    law and clock the pages use (:mod:`servicekit.runtime`), from the environment when not given.

    Tracing is the services' (``servicekit.telemetry``, the ``OTEL_*`` environment): each
    page request is a server span, and the httpx calls to the services are its child spans
    carrying the W3C ``traceparent``, so a page's trace joins the services' spans.
    """
    settings = settings or WebSettings()
    telemetry.configure_tracing("web", settings.environment)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with (
            httpx.AsyncClient(
                timeout=settings.api_timeout_seconds, transport=transport, limits=BACKEND_LIMITS
            ) as client,
            httpx.AsyncClient(timeout=10.0) as provider_client,
        ):
            app.state.backend = Backend(settings, client)
            # the identity provider is reached directly, never through the services' transport
            app.state.oidc = Provider(settings, provider_client) if settings.oidc_issuer else None
            yield

    app = FastAPI(title="Roomtax Web", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.state.runtime = runtime or Runtime.from_environment()
    app.state.codec = SessionCodec(settings.secret_key, max_age=settings.session_max_age_seconds)
    app.state.templates = templates()
    headers = security_headers(production=settings.environment == "production")

    @app.middleware("http")
    async def session_and_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        codec: SessionCodec = app.state.codec
        loaded = codec.loads(request.cookies.get(settings.cookie_name))
        request.state.session = loaded or Session()
        request.state.session_dirty = loaded is None
        request.state.lang = i18n.Lang(
            i18n.choose(request.cookies.get(i18n.COOKIE), request.headers.get("accept-language"))
        )
        response = await call_next(request)
        if request.state.session_dirty and not request.url.path.startswith("/static/"):
            response.set_cookie(
                settings.cookie_name,
                codec.dumps(request.state.session),
                max_age=settings.session_max_age_seconds,
                httponly=True,
                secure=settings.cookie_secure,
                samesite="lax",
                path="/",
            )
        for name, value in headers.items():
            response.headers.setdefault(name, value)
        if "text/html" in response.headers.get("content-type", ""):
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.exception_handler(SignInRequired)
    async def _sign_in(request: Request, exc: Exception) -> Response:
        return redirect(sign_in_url(request), request)

    @app.exception_handler(CsrfFailed)
    async def _csrf(request: Request, exc: Exception) -> Response:
        _ = request.state.lang.gettext
        message = _("This form expired. Go back, reload the page and send it again.")
        return render(request, "error.html", 403, title=_("Form expired"), message=message)

    @app.exception_handler(WrongRole)
    async def _role(request: Request, exc: Exception) -> Response:
        _ = request.state.lang.gettext
        message = _("Your role does not give access to this page.")
        return render(request, "error.html", 403, title=_("Not allowed"), message=message)

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        _ = request.state.lang.gettext
        if exc.status == 401:
            return redirect(sign_in_url(request), request)
        if exc.status == 404:
            return render(
                request, "error.html", 404, title=_("Not found"), message=_("There is nothing here for you.")
            )
        if exc.status == 403:
            message = _("Your role does not give access to this page.")
            return render(request, "error.html", 403, title=_("Not allowed"), message=message)
        log.warning("backend error %s on %s: %s", exc.status, request.url.path, exc.detail)
        return render(request, "error.html", 502, title=_("Service unavailable"), message=exc.detail)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        _ = request.state.lang.gettext
        if exc.status_code == 404:
            return render(
                request, "error.html", 404, title=_("Not found"), message=_("There is nothing here for you.")
            )
        return render(request, "error.html", exc.status_code, title=str(exc.detail), message="")

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/readyz", include_in_schema=False)
    async def readyz(request: Request) -> Response:
        """Ready when the registry answers: without it nobody can sign in."""
        backend: Backend = request.app.state.backend
        try:
            r = await backend.client.get(backend.base("registry") + "/healthz", timeout=2.0)
            ok = r.status_code == 200
        except httpx.HTTPError:
            ok = False
        return PlainTextResponse("ready" if ok else "registry unreachable", status_code=200 if ok else 503)

    telemetry.instrument_app(app)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    for r in (
        auth.router,
        portal.router,
        answers.router,
        agency.router,
        distribution.router,
        casework.router,
        plans.portal,
        plans.agency,
    ):
        app.include_router(r)
    return app
