"""RFC 9457 problem+json for every error.

Services raise :class:`DomainError` subclasses; one set of handlers turns them,
request validation errors, taxcore's typed errors and anything unexpected into
``application/problem+json``. Endpoints never build error bodies by hand.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from servicekit import problems_i18n
from taxcore.errors import TaxcoreError
from taxcore.money import MoneyError

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "https://roomtax.dev/problems/"
#: what a 503 for a busy process (no database connection free in time) asks the caller to wait
BUSY_RETRY_AFTER_SECONDS = 1
log = logging.getLogger("servicekit.errors")


def pointer(loc: tuple[Any, ...] | list[Any]) -> str:
    """JSON pointer (RFC 6901) for a pydantic error location: ``#/body/lines/0/amount``."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in loc]
    return "#/" + "/".join(parts)


def field_pointer(field: str, *, root: str = "body") -> str:
    """Pointer for a dotted taxcore field name like ``exempt[0].evidence``."""
    segments: list[str] = [root]
    for chunk in field.replace("]", "").split("."):
        segments.extend(s for s in chunk.split("[") if s)
    return pointer(segments)


class DomainError(Exception):
    """Base of every error a service raises on purpose."""

    status: ClassVar[int] = 400
    slug: ClassVar[str] = "bad-request"
    title: ClassVar[str] = "Bad request"

    def __init__(self, detail: str, *, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []

    def problem(self, instance: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": TYPE_BASE + self.slug,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if instance:
            body["instance"] = instance
        if self.errors:
            body["errors"] = self.errors
        return body

    @classmethod
    def openapi(cls) -> dict[int | str, dict[str, Any]]:
        """Entry for a route's ``responses=`` so the error appears in the OpenAPI document."""
        return {
            cls.status: {
                "description": cls.title,
                "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
            }
        }


class NotFound(DomainError):
    status, slug, title = 404, "not-found", "Not found"


class Conflict(DomainError):
    status, slug, title = 409, "conflict", "Conflict"


class Forbidden(DomainError):
    status, slug, title = 403, "forbidden", "Forbidden"


class Unauthorized(DomainError):
    status, slug, title = 401, "unauthorized", "Unauthorized"


class ValidationFailed(DomainError):
    status, slug, title = 422, "validation-failed", "Validation failed"

    @classmethod
    def on(cls, field: str, message: str, *, root: str = "body") -> ValidationFailed:
        """A validation error on one field (dotted taxcore-style name)."""
        return cls(
            f"{field}: {message}",
            errors=[{"pointer": field_pointer(field, root=root), "detail": message}],
        )


class IdempotencyMismatch(DomainError):
    status, slug, title = 422, "idempotency-key-reused", "Idempotency-Key reused with another body"


class PayloadTooLarge(StarletteHTTPException):
    """A request body crossed its route's limit while it was read (servicekit.limits)."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=f"the request body is larger than {limit} bytes")
        self.limit = limit


def too_large_problem(limit: int, instance: str) -> dict[str, Any]:
    return {
        "type": TYPE_BASE + "payload-too-large",
        "title": "Payload too large",
        "status": 413,
        "detail": f"the request body is larger than {limit} bytes, the limit of this route",
        "instance": instance,
        "errors": [{"pointer": "#/body", "detail": f"at most {limit} bytes"}],
    }


def problem_response(
    body: dict[str, Any], headers: dict[str, str] | None = None, *, request: Request | None = None
) -> JSONResponse:
    """The problem as JSON; its human text in the request's ``Accept-Language`` (en, es)."""
    lang = problems_i18n.language(request.headers.get("accept-language") if request is not None else None)
    out = {**(headers or {}), "Content-Language": lang}
    return JSONResponse(
        problems_i18n.localize(body, lang),
        status_code=int(body["status"]),
        media_type=PROBLEM_JSON,
        headers=out,
    )


def _validation_errors(exc: RequestValidationError) -> list[dict[str, str]]:
    out = []
    for err in exc.errors():
        out.append({"pointer": pointer(err.get("loc", ())), "detail": str(err.get("msg", ""))})
    return out


def install_error_handlers(app: FastAPI) -> None:
    async def domain(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DomainError)
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
        return problem_response(exc.problem(request.url.path), headers, request=request)

    async def validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = _validation_errors(exc)
        first = errors[0] if errors else {"pointer": "#/", "detail": "invalid"}
        err = ValidationFailed(f"{first['pointer'][2:]}: {first['detail']}", errors=errors)
        return problem_response(err.problem(request.url.path), request=request)

    async def taxcore_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, TaxcoreError | MoneyError)
        err = ValidationFailed.on(exc.field, exc.message)
        return problem_response(err.problem(request.url.path), request=request)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        body = {
            "type": TYPE_BASE + str(exc.status_code),
            "title": str(exc.detail) if exc.detail else "Error",
            "status": exc.status_code,
            "detail": str(exc.detail),
            "instance": request.url.path,
        }
        return problem_response(body, dict(exc.headers) if exc.headers else None, request=request)

    async def payload_too_large(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, PayloadTooLarge)
        return problem_response(
            too_large_problem(exc.limit, request.url.path), {"Connection": "close"}, request=request
        )

    async def integrity(request: Request, exc: Exception) -> JSONResponse:
        """A constraint the service's own checks did not catch (a race, a dangling reference):
        the request changed nothing (its transaction rolled back); answer 409, not 500."""
        log.warning("integrity error on %s: %s", request.url.path, str(exc).splitlines()[0][:300])
        return problem_response(
            Conflict("the request conflicts with existing data (a duplicate or a missing reference)").problem(
                request.url.path
            ),
            request=request,
        )

    async def database(request: Request, exc: Exception) -> JSONResponse:
        """A value the database cannot hold (out of range, invalid text) is bad input: 422."""
        sqlstate = str(getattr(getattr(exc, "orig", None), "sqlstate", "") or "")
        if sqlstate.startswith("22"):  # class 22: data exception
            return problem_response(
                ValidationFailed("a value is out of the range the platform accepts").problem(
                    request.url.path
                ),
                request=request,
            )
        return await unexpected(request, exc)

    async def busy(request: Request, exc: Exception) -> JSONResponse:
        """No database connection came free in time (``db_pool_timeout``): the process is at
        capacity. Nothing was done; the caller may send the same request again."""
        log.warning("no database connection free for %s: %s", request.url.path, exc)
        body = {
            "type": TYPE_BASE + "busy",
            "title": "Service busy",
            "status": 503,
            "detail": "the service is at capacity; nothing was done, send the request again shortly",
            "instance": request.url.path,
        }
        return problem_response(body, {"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)}, request=request)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", extra={"path": request.url.path})
        body = {
            "type": TYPE_BASE + "internal",
            "title": "Internal server error",
            "status": 500,
            "detail": "An unexpected error occurred; it has been logged.",
            "instance": request.url.path,
        }
        return problem_response(body, request=request)

    app.add_exception_handler(DomainError, domain)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(TaxcoreError, taxcore_error)
    app.add_exception_handler(MoneyError, taxcore_error)
    app.add_exception_handler(PayloadTooLarge, payload_too_large)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(IntegrityError, integrity)
    app.add_exception_handler(DBAPIError, database)
    app.add_exception_handler(PoolTimeout, busy)
    app.add_exception_handler(Exception, unexpected)


PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"pointer": {"type": "string"}, "detail": {"type": "string"}},
            },
        },
    },
}
