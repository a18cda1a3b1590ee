"""What every request pays in the chassis (issue 12): no threadpool hop, no ping round trip."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from sqlalchemy import text
from sqlalchemy.util import greenlet_spawn
from sqlalchemy.util.queue import Empty

from servicekit.auth import get_principal
from servicekit.db import POOL_RECYCLE_SECONDS, FairQueue, FairQueuePool, get_session, make_engine
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


class TestFairQueue:
    """The pool's waiters are served first come, first served (the p99 at 32 connections)."""

    async def test_a_returned_connection_goes_to_the_first_waiter_not_to_a_newcomer(self) -> None:
        queue: FairQueue[str] = FairQueue(maxsize=1)
        served: list[str] = []

        async def request(name: str) -> None:
            conn = await greenlet_spawn(queue.get, True, 5.0)
            served.append(name)
            await asyncio.sleep(0)
            queue.put_nowait(conn)

        waiting = [asyncio.create_task(request(n)) for n in ("first", "second", "third")]
        await asyncio.sleep(0.01)  # all three wait: the pool's only connection is out
        newcomer = asyncio.create_task(request("newcomer"))  # runs before the woken waiter
        queue.put_nowait("connection")
        await asyncio.gather(*waiting, newcomer)
        # asyncio.Queue (SQLAlchemy's) serves "newcomer" first and sends "first" to the back
        assert served == ["first", "second", "third", "newcomer"]
        assert queue.qsize() == 1

    async def test_a_waiter_that_times_out_leaves_the_line(self) -> None:
        queue: FairQueue[str] = FairQueue(maxsize=1)
        with pytest.raises(Empty):
            await greenlet_spawn(queue.get, True, 0.01)
        queue.put_nowait("connection")  # not handed to the expired waiter
        assert queue.get_nowait() == "connection"

    async def test_a_waiter_cancelled_after_it_was_handed_a_connection_passes_it_on(self) -> None:
        queue: FairQueue[str] = FairQueue(maxsize=1)
        cancelled = asyncio.create_task(greenlet_spawn(queue.get, True, 5.0))
        later = asyncio.create_task(greenlet_spawn(queue.get, True, 5.0))
        await asyncio.sleep(0.01)
        queue.put_nowait("connection")  # handed to the first waiter, which has not run yet
        cancelled.cancel()
        assert await later == "connection"
        assert cancelled.cancelled()

    async def test_the_engines_pool_is_fair(self) -> None:
        engine = make_engine(database_url("postgres"), application_name="test", pool_size=1)
        try:
            assert isinstance(engine.sync_engine.pool, FairQueuePool)
            order: list[int] = []

            async def use(i: int) -> None:
                async with engine.connect() as conn:
                    await conn.execute(text("SELECT 1"))
                    order.append(i)

            await asyncio.gather(*(use(i) for i in range(6)))
            assert order == list(range(6))
        finally:
            await engine.dispose()
