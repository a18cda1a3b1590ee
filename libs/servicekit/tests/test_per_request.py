"""What every request pays in the chassis (issue 12): no threadpool hop, no ping round trip."""

from __future__ import annotations

import inspect

from sqlalchemy import text

from servicekit.auth import get_principal
from servicekit.db import POOL_RECYCLE_SECONDS, get_session, make_engine
from servicekit.testing import database_url


class TestPerRequestDependencies:
    def test_the_session_and_the_principal_are_resolved_on_the_event_loop(self) -> None:
        # FastAPI runs a plain ``def`` dependency in the threadpool: two hops per request
        assert inspect.iscoroutinefunction(get_session)
        assert inspect.iscoroutinefunction(get_principal)


class TestEnginePool:
    async def test_a_checkout_sends_no_ping_and_connections_are_recycled(self) -> None:
        engine = make_engine(database_url("postgres"), application_name="test")
        try:
            pool = engine.sync_engine.pool
            assert pool._pre_ping is False  # noqa: SLF001 - the setting is only on the pool
            assert pool._recycle == POOL_RECYCLE_SECONDS == 1800  # noqa: SLF001
        finally:
            await engine.dispose()

    async def test_the_pool_does_not_overflow_so_a_load_above_it_waits_instead_of_reconnecting(self) -> None:
        engine = make_engine(database_url("postgres"), application_name="test", pool_size=2)
        try:
            pool = engine.sync_engine.pool
            assert (pool.size(), pool._max_overflow) == (2, 0)  # type: ignore[attr-defined]  # noqa: SLF001
            async with engine.connect() as a, engine.connect() as b:
                pids = {
                    await a.scalar(text("SELECT pg_backend_pid()")),
                    await b.scalar(text("SELECT pg_backend_pid()")),
                }
            for _ in range(3):  # the same two backends serve every later checkout
                async with engine.connect() as c:
                    assert await c.scalar(text("SELECT pg_backend_pid()")) in pids
        finally:
            await engine.dispose()
