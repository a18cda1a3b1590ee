"""Database: engine per process, one transaction per request or per event.

The engine is created in the app's lifespan (or by a worker's ``main``) and
disposed on shutdown. :class:`TransactionalRoute` opens the session and its
transaction around the route handler and commits *before* the response is
sent, so a client never sees a success whose effects did not commit. Services
never call ``commit()``; they ``flush()`` when they need an id.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Annotated, Any, TypeVar

import asyncpg
from fastapi import Depends, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy import DateTime, MetaData, Numeric, func, text
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry, PoolProxiedConnection
from sqlalchemy.util import greenlet_spawn
from sqlalchemy.util import queue as sqla_queue
from sqlalchemy.util.concurrency import await_
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servicekit.errors import IdempotencyMismatch

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def make_metadata() -> MetaData:
    """A service's own MetaData with the shared naming convention."""
    return MetaData(naming_convention=NAMING_CONVENTION)


Money = Numeric(18, 2)
"""Column type of every amount: NUMERIC(18,2), read back as ``Decimal``."""


def new_id() -> str:
    """Primary keys are random UUIDs as text: unguessable, safe to expose."""
    return str(uuid.uuid4())


class Created:
    """Mixin: when the row was written (rows of ledgers and histories are never updated)."""

    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


#: seconds after which a pooled connection is replaced (instead of a ping on every checkout)
POOL_RECYCLE_SECONDS = 1800

_T = TypeVar("_T")


def _expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_exception(sqla_queue.Empty())


class FairQueue(sqla_queue.QueueCommon[_T]):
    """The pool's idle connections, handed to the requests waiting for one in the order they
    came (issue 12: the p99 of ``POST /v1/declarations`` at 32 connections).

    SQLAlchemy's asyncio queue is an ``asyncio.Queue``, which is not fair: a returned
    connection wakes the first waiter, but any request arriving before that waiter runs
    finds the connection idle and takes it, and the woken waiter, finding none, queues again
    *at the back*. Under a load above the pool size most requests got a connection at once
    and a few waited again and again: at 32 connections on a pool of 10, checkout waits of
    p50 0.1 ms, p90 165 ms, p99 464 ms, max 894 ms (the slowest 1% of requests spent 94% of
    their time there). Here a returned connection goes straight to the first waiter (its
    future resolved with it), so no newcomer can take it, and a request finds an idle
    connection only when nobody is waiting. A waiter that times out (the pool timeout: a
    503) or is cancelled leaves the line; one cancelled after it was handed a connection
    gives it to the next."""

    def __init__(self, maxsize: int = 0, use_lifo: bool = False) -> None:
        self.maxsize = maxsize
        self.use_lifo = use_lifo
        self._idle: deque[_T] = deque()
        self._waiters: deque[asyncio.Future[_T]] = deque()

    def empty(self) -> bool:
        return not self._idle

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._idle)

    def qsize(self) -> int:
        return len(self._idle)

    def put_nowait(self, item: _T) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # else timed out or cancelled
                waiter.set_result(item)
                return
        if self.full():
            raise sqla_queue.Full()
        self._idle.append(item)

    def put(self, item: _T, block: bool = True, timeout: float | None = None) -> None:
        self.put_nowait(item)  # the pool never holds more than maxsize: a put never waits

    def get_nowait(self) -> _T:
        if not self._idle:
            raise sqla_queue.Empty()
        return self._idle.pop() if self.use_lifo else self._idle.popleft()

    def get(self, block: bool = True, timeout: float | None = None) -> _T:
        if self._idle or not block:  # an idle connection means nobody is waiting
            return self.get_nowait()
        return await_(self._wait(timeout))

    async def _wait(self, timeout: float | None) -> _T:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[_T] = loop.create_future()
        self._waiters.append(waiter)
        timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.put_nowait(waiter.result())  # handed a connection, then cancelled
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            raise
        finally:
            if timer is not None:
                timer.cancel()


class FairQueuePool(AsyncAdaptedQueuePool):
    """SQLAlchemy's asyncio pool with :class:`FairQueue`: first come, first served."""

    _queue_class: type[sqla_queue.QueueCommon[ConnectionPoolEntry]] = FairQueue


def make_engine(
    database_url: str,
    *,
    application_name: str,
    pool_size: int = 10,
    max_overflow: int = 0,
    pool_timeout: float = 30.0,
) -> AsyncEngine:
    """The process's engine: a pool of ``pool_size`` connections kept open.

    No overflow by default: an overflow connection is opened when more than
    ``pool_size`` requests are in flight and closed as soon as it is returned to a
    full pool, so under a sustained load above ``pool_size`` the process opens and
    closes a connection per request (a new backend, asyncpg's type introspection, no
    cached prepared statements). Requests beyond the pool wait for a connection
    instead; a CPU-bound process gains nothing from more connections.

    No ``pool_pre_ping``: it costs a round trip on every checkout (every request). The
    pool keeps itself healthy without it: a connection is recycled after
    :data:`POOL_RECYCLE_SECONDS`, and when a statement fails on a dead connection
    (a database restart) SQLAlchemy sees the disconnect, invalidates that connection
    and every older one in the pool, so only the requests in flight at the outage fail.

    Requests waiting for a connection are served in the order they came (:class:`FairQueue`).
    A request that waits ``pool_timeout`` seconds for a connection gets a 503 with
    ``Retry-After`` (:mod:`servicekit.errors`), not a 500: the process is busy, the
    request changed nothing and can be sent again.
    """
    return create_async_engine(
        database_url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=pool_timeout,
        pool_recycle=POOL_RECYCLE_SECONDS,
        poolclass=FairQueuePool,
        connect_args={"server_settings": {"application_name": application_name}},
    )


def make_sessionmaker(engine: AsyncEngine, *, service: str) -> async_sessionmaker[AsyncSession]:
    """Sessions that know their service (the outbox uses it as the CloudEvents ``source``)."""
    return async_sessionmaker(engine, expire_on_commit=False, info={"service": service})


async def get_session(request: Request) -> AsyncSession:
    """The route's session (``async def``: a plain ``def`` dependency costs a threadpool hop)."""
    session = getattr(request.state, "session", None)
    if session is None:  # pragma: no cover - a route outside TransactionalRoute
        raise RuntimeError("SessionDep used on a route that is not a TransactionalRoute")
    return session  # type: ignore[no-any-return]


SessionDep = Annotated[AsyncSession, Depends(get_session)]

IDEMPOTENT_METHODS = {"POST"}


def pool_connection(request: Request) -> AbstractAsyncContextManager[asyncpg.Connection]:
    """An asyncpg connection of the app's pool, without a session, for a request whose
    effect is ONE statement, sent outside a transaction block (PostgreSQL runs it as its
    own transaction, all or nothing): a :func:`direct` route's.

    Under a test's rolled-back outer transaction (:func:`servicekit.testing.rolled_back`
    binds the sessions to one connection) the statements run in a savepoint of it, as a
    session's would."""
    bind = request.app.state.sessionmaker.kw["bind"]
    if isinstance(bind, AsyncConnection):
        return _in_savepoint(bind)
    return _Pooled(bind)


@asynccontextmanager
async def _in_savepoint(bind: AsyncConnection) -> AsyncIterator[asyncpg.Connection]:
    raw = await bind.get_raw_connection()
    conn: asyncpg.Connection = raw.driver_connection
    async with conn.transaction():
        yield conn


class _Pooled:
    """A connection checked out of the engine's pool for the block, checked in after it
    whatever happens (a class, not an ``@asynccontextmanager``: no async generator and its
    context manager per request, ~3 us of the hot route's; issue 12)."""

    __slots__ = ("_engine", "_proxied")

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def __aenter__(self) -> asyncpg.Connection:
        self._proxied: PoolProxiedConnection = await self._engine.raw_connection()
        conn: asyncpg.Connection = self._proxied.driver_connection
        return conn

    async def __aexit__(self, *exc_info: object) -> None:
        await greenlet_spawn(self._proxied.close)


#: a route's direct handler: it answers the request itself, or returns None (before it has
#: done anything) to leave it to the route's FastAPI handler
DirectHandler = Callable[[Request], Awaitable[Response | None]]
_DIRECT = "__servicekit_direct__"
_F = TypeVar("_F", bound=Callable[..., Any])


def direct(handler: DirectHandler) -> Callable[[_F], _F]:
    """Serve the decorated route's requests without an ``Idempotency-Key`` with ``handler``
    first (:class:`TransactionalRoute`): no dependency solving, no session, the response
    serialized once. The endpoint stays the route's contract (its OpenAPI operation) and
    serves whatever ``handler`` leaves to it (an invalid body, a query string, a keyed
    request), so a problem is answered by the same code as before."""

    def mark(endpoint: _F) -> _F:
        setattr(endpoint, _DIRECT, handler)
        return endpoint

    return mark


async def _idempotency_scope(request: Request) -> str | None:
    """The authenticated caller the key belongs to, so two clients' keys never collide or leak.

    ``None`` for a caller without a valid access token: its key is ignored (never stored,
    never replayed), or anyone sending the same key without credentials would receive
    the first caller's response (e.g. a token from ``/v1/oauth/token`` with HTTP Basic).
    """
    verifier = getattr(request.app.state, "token_verifier", None)
    auth = request.headers.get("authorization", "")
    if verifier is not None and auth.lower().startswith("bearer "):
        try:
            principal = await verifier.verify_fresh(auth[7:])
        except Exception:  # noqa: BLE001 - an invalid token fails later, in the endpoint
            return None
        request.state.principal = principal  # verified once: get_principal takes it from here
        return str(principal.client_id)
    return None


async def _idempotent_replay(
    session: AsyncSession, request: Request, key: str, body: bytes
) -> Response | None:
    scope = await _idempotency_scope(request)
    if scope is None:
        request.state.idempotency = None
        return None
    digest = hashlib.sha256(request.method.encode() + request.url.path.encode() + body).hexdigest()
    request.state.idempotency = (scope, key, digest)
    inserted = await session.execute(
        text(
            "INSERT INTO idempotency_keys (scope, key, request_hash) VALUES (:s, :k, :h) "
            "ON CONFLICT (scope, key) DO NOTHING RETURNING key"
        ),
        {"s": scope, "k": key, "h": digest},
    )
    if inserted.first() is not None:
        return None
    row = (
        await session.execute(
            text(
                "SELECT request_hash, status_code, response_body, content_type "
                "FROM idempotency_keys WHERE scope = :s AND key = :k FOR UPDATE"
            ),
            {"s": scope, "k": key},
        )
    ).one()
    if row.request_hash != digest:
        raise IdempotencyMismatch(
            f"Idempotency-Key {key!r} was first used with a different request; "
            "use a new key for a new request",
            errors=[{"pointer": "#/header/Idempotency-Key", "detail": "reused with another body"}],
        )
    return Response(
        content=bytes(row.response_body),
        status_code=row.status_code,
        media_type=row.content_type,
        headers={"Idempotent-Replayed": "true"},
    )


#: scope key: the request was offered to its route's direct handler, which left it to the route
_DECLINED = "servicekit.direct_declined"


class DirectRoutes:
    """ASGI middleware, the innermost of the app's own (:func:`servicekit.app.create_app`):
    a request for a :func:`direct` route (its method and path, no ``Idempotency-Key``) goes
    to the route's direct handler at once, without Starlette's exception middleware, FastAPI's
    router (which matches an included router's routes twice) and the route's request wrapper:
    ~0.1 ms of CPU per request (issue 12). What it skips it does itself, the same way: the
    route is put in the scope (the access log's and the metrics' label), a path parameter
    converted as the route converts it, an exception the app has a handler for answered by
    that handler (an unexpected one goes on up, to the server-error middleware, as from the
    route). A request the handler leaves to the route (it returns None) goes down the stack
    with what it had received replayed, and the route does not offer it again."""

    def __init__(
        self, app: ASGIApp, *, routes: Iterable[BaseRoute], exception_handlers: Mapping[Any, Any]
    ) -> None:
        self.app = app
        self.handlers = exception_handlers  # the app's own dict: handlers added later count
        self.exact: dict[tuple[str, str], tuple[APIRoute, DirectHandler]] = {}
        self.patterns: list[tuple[APIRoute, DirectHandler, frozenset[str]]] = []
        for route in routes:
            handler = getattr(getattr(route, "endpoint", None), _DIRECT, None)
            if not isinstance(route, APIRoute) or handler is None:
                continue
            methods = frozenset(route.methods or ())
            if route.param_convertors:
                self.patterns.append((route, handler, methods))
            else:
                for method in methods:
                    self.exact[(method, route.path)] = (route, handler)

    def _route(self, scope: Scope) -> tuple[APIRoute, DirectHandler] | None:
        found = self.exact.get((scope["method"], scope["path"]))
        if found is not None or not self.patterns:
            return found
        for route, handler, methods in self.patterns:
            match = route.path_regex.match(scope["path"])
            if match is not None and scope["method"] in methods:
                scope["path_params"] = {
                    k: route.param_convertors[k].convert(v) for k, v in match.groupdict().items()
                }
                return route, handler
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and not scope.get("root_path"):
            found = self._route(scope)
        if found is None or any(k == b"idempotency-key" for k, _ in scope["headers"]):
            await self.app(scope, receive, send)
            return
        route, handler = found
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        received: list[Message] = []

        async def recording() -> Message:
            message = await receive()
            received.append(message)
            return message

        request = Request(scope, recording, send)
        try:
            response = await handler(request)
        except Exception as exc:  # noqa: BLE001 - answered as the app's handlers answer it
            answer = self._handler_for(exc)
            if answer is None:
                raise
            response = await answer(request, exc)
        if response is not None:
            await response(scope, receive, send)
            return

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        scope[_DECLINED] = True
        await self.app(scope, replay, send)

    def _handler_for(self, exc: Exception) -> Callable[[Request, Exception], Awaitable[Response]] | None:
        """The handler Starlette's exception middleware would call (``Exception`` and 500 are
        the server-error middleware's, outside)."""
        for cls in type(exc).__mro__:
            if cls is Exception:
                return None
            if cls in self.handlers:
                return self.handlers[cls]  # type: ignore[no-any-return]
        return None


class TransactionalRoute(APIRoute):
    """Route whose handler runs inside one session transaction.

    Commits when the handler returns a non-error response, rolls back on an
    exception or an error status. POST requests carrying ``Idempotency-Key``
    store their response in the same transaction as their effect; a retry with
    the same key and body replays it, another body is rejected.

    An endpoint marked :func:`direct` has its requests without a key offered to its
    direct handler first.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        original = super().get_route_handler()
        fast: DirectHandler | None = getattr(self.endpoint, _DIRECT, None)

        async def handler(request: Request) -> Response:
            offered = _DECLINED in request.scope  # the front door offered it already
            if fast is not None and not offered and "idempotency-key" not in request.headers:
                answered = await fast(request)
                if answered is not None:
                    return answered
            sessionmaker: async_sessionmaker[AsyncSession] = request.app.state.sessionmaker
            async with sessionmaker() as session:
                try:
                    async with session.begin():
                        return await self._in_transaction(original, session, request)
                except _Rollback as rollback:
                    return rollback.response

        return handler

    @staticmethod
    async def _in_transaction(
        original: Callable[[Request], Awaitable[Response]], session: AsyncSession, request: Request
    ) -> Response:
        request.state.session = session
        key = request.headers.get("idempotency-key")
        idempotent = bool(key) and request.method in IDEMPOTENT_METHODS
        if key and idempotent:
            if len(key) > 200:
                raise IdempotencyMismatch(
                    "Idempotency-Key is longer than 200 characters",
                    errors=[{"pointer": "#/header/Idempotency-Key", "detail": "at most 200 characters"}],
                )
            replay = await _idempotent_replay(session, request, key, await request.body())
            if replay is not None:
                return replay
        response = await original(request)
        if response.status_code >= 400:
            raise _Rollback(response)
        if idempotent and request.state.idempotency is not None:
            scope, k, _ = request.state.idempotency
            await session.execute(
                text(
                    "UPDATE idempotency_keys SET status_code = :c, response_body = :b, "
                    "content_type = :t WHERE scope = :s AND key = :k"
                ),
                {
                    "c": response.status_code,
                    "b": bytes(getattr(response, "body", b"")),
                    "t": response.media_type or "application/json",
                    "s": scope,
                    "k": k,
                },
            )
        return response


class _Rollback(Exception):  # noqa: N818 - control flow, not an error
    """Carries an error response out of the transaction so it rolls back."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response
