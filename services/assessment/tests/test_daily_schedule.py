"""The daily jobs run once per scheduled day across worker replicas (servicekit.schedule).

Replicas are modelled as separate engines (separate connection pools, as separate
pods have) on the suite's database; the race is real: both try the advisory lock.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path

import pytest
from assessment_factories import RUNTIME, Bus, lodging_event, new_account, rows
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from assessment.consumers import consumers
from assessment.jobs.service import refresh_all_summaries, run_daily
from assessment.settings import AssessmentSettings
from servicekit.db import make_engine, make_sessionmaker
from servicekit.schedule import DailySchedule, run_once, scheduled_daily
from servicekit.testing import consumer_records, fresh_database

DB = async_sessionmaker[AsyncSession]
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
AST = "America/Puerto_Rico"  # UTC-4 all year


@pytest.fixture
async def replicas(assessment_db: str) -> AsyncIterator[list[AsyncEngine]]:
    engines = [make_engine(assessment_db, application_name=f"replica-{i}", pool_size=2) for i in range(3)]
    yield engines
    for e in engines:
        await e.dispose()


class Counter:
    def __init__(self, *, seconds: float = 0.3, fail_first: bool = False) -> None:
        self.days: list[date] = []
        self.seconds = seconds
        self.fail_first = fail_first

    async def __call__(self, on: date) -> None:
        await asyncio.sleep(self.seconds)  # long enough for the other replicas to look
        if self.fail_first and not self.days:
            self.days.append(on)
            raise RuntimeError("database hiccup")
        self.days.append(on)


def job_name() -> str:
    return f"test.{uuid.uuid4().hex[:8]}"


async def job_run(engine: AsyncEngine, job: str) -> tuple[object, ...]:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT scheduled_for, finished_at IS NOT NULL AS finished, attempts, error "
                    "FROM job_runs WHERE job = :j"
                ),
                {"j": job},
            )
        ).one()
    return tuple(row)


class TestDailySchedule:
    def test_the_day_due_and_the_next_run_in_the_agency_clock(self) -> None:
        s = DailySchedule(time(2, 0), AST)
        # 05:59 UTC is 01:59 AST: today's 02:00 has not come, yesterday's is the last due
        assert s.latest_due(datetime(2026, 12, 1, 5, 59, tzinfo=UTC)) == date(2026, 11, 30)
        assert s.latest_due(datetime(2026, 12, 1, 6, 0, tzinfo=UTC)) == date(2026, 12, 1)
        nxt = s.next_after(datetime(2026, 12, 1, 6, 0, tzinfo=UTC))
        assert nxt.astimezone(UTC) == datetime(2026, 12, 2, 6, 0, tzinfo=UTC)


class TestOneRunnerPerSchedule:
    async def test_three_replicas_racing_run_the_job_exactly_once(self, replicas: list[AsyncEngine]) -> None:
        job, work, day = job_name(), Counter(), date(2026, 12, 1)
        outcomes = await asyncio.gather(
            *(
                run_once(e, job=job, scheduled_for=day, runner=f"r{i}", work=work)
                for i, e in enumerate(replicas)
            )
        )
        assert sorted(outcomes) == ["busy", "busy", "ran"]
        assert work.days == [day]
        # a replica that looks after the run finds it done; the next day runs again
        assert await run_once(replicas[1], job=job, scheduled_for=day, runner="r1", work=work) == "done"
        assert work.days == [day]
        assert (
            await run_once(replicas[2], job=job, scheduled_for=date(2026, 12, 2), runner="r2", work=work)
            == "ran"
        )
        assert work.days == [day, date(2026, 12, 2)]

    async def test_a_failed_run_is_taken_again_by_another_replica(self, replicas: list[AsyncEngine]) -> None:
        job, work, day = job_name(), Counter(seconds=0, fail_first=True), date(2026, 12, 1)
        assert await run_once(replicas[0], job=job, scheduled_for=day, runner="r0", work=work) == "failed"
        assert await job_run(replicas[0], job) == (day, False, 1, "RuntimeError: database hiccup")
        assert await run_once(replicas[1], job=job, scheduled_for=day, runner="r1", work=work) == "ran"
        assert await job_run(replicas[0], job) == (day, True, 2, None)

    async def test_replica_loops_run_the_day_once_whenever_their_pods_start(
        self, replicas: list[AsyncEngine]
    ) -> None:
        """Three pods start at 01:00 AST, before the 02:00 schedule: the previous day, never
        run, is caught up once. Three pods (re)started at 02:00:01 run that day once."""
        job, work = job_name(), Counter(seconds=0.2)
        clock = {"now": datetime(2026, 12, 1, 5, 0, tzinfo=UTC)}  # 01:00 AST
        schedule = DailySchedule(time(2, 0), AST)

        def start(stop: asyncio.Event) -> list[asyncio.Task[None]]:
            return [
                asyncio.create_task(
                    scheduled_daily(
                        e,
                        stop,
                        job=job,
                        schedule=schedule,
                        runner=f"r{i}",
                        work=work,
                        retry_seconds=0.1,
                        now=lambda: clock["now"],
                    )
                )
                for i, e in enumerate(replicas)
            ]

        for at in (datetime(2026, 12, 1, 5, 0, tzinfo=UTC), datetime(2026, 12, 1, 6, 0, 1, tzinfo=UTC)):
            clock["now"] = at
            stop = asyncio.Event()
            loops = start(stop)
            await asyncio.sleep(1.0)
            stop.set()
            await asyncio.gather(*loops)
        assert work.days == [date(2026, 11, 30), date(2026, 12, 1)]


class TestDailyJobsTwice:
    async def test_running_the_day_twice_changes_nothing(
        self, bus: Bus, db: DB, service_app: FastAPI
    ) -> None:
        account = new_account()
        await bus.lodging(account, registered_on="2025-01-01")
        await bus.declare(account, "2025-01", room_revenue="100000.00")
        settings = service_app.state.settings
        await run_daily(db, settings, date(2025, 3, 15), law=service_app.state.runtime.law)
        first = await rows(db, "SELECT period, tax FROM estimates WHERE tax_account = :a", a=account)
        await run_daily(db, settings, date(2025, 3, 15), law=service_app.state.runtime.law)
        assert await rows(db, "SELECT period, tax FROM estimates WHERE tax_account = :a", a=account) == first
        assert first == [("2025-02", Decimal("9000.00"))]  # due 2025-03-10 (§28), 100,000 x 9%
        events = await rows(
            db,
            "SELECT count(*) FROM outbox WHERE key = :a AND payload->'data'->>'basis' = 'estimate'",
            a=account,
        )
        assert events == [(1,)]


class TestRefreshAllSummaries:
    async def test_each_account_is_refreshed_under_its_lock(
        self, bus: Bus, db: DB, assessment_db: str
    ) -> None:
        """The daily refresh waits for an account's lock (held here on another connection, as a
        consumer batch holds it from its set-up to its commit) and goes on once it is released:
        a batch drops the summaries of periods no longer known by what it read of them under
        that lock. (The test's own connection holds the lock of every account its events
        touched, to its end: the lock held elsewhere is that of a lodging copied in by SQL.)"""
        account, other = new_account(), new_account()
        await bus.lodging(account, registered_on="2025-01-01")
        await bus.declare(account, "2025-01", room_revenue="100000.00")
        await bus.declare(account, "2025-02", room_revenue="50000.00")
        async with db() as s:
            await s.execute(
                text("DELETE FROM account_summaries WHERE tax_account = :a AND period = '2025-02'"),
                {"a": account},
            )
            await s.execute(
                text(
                    "CREATE TEMP TABLE copied ON COMMIT DROP AS SELECT * FROM lodgings WHERE tax_account = :a"
                ),
                {"a": account},
            )
            await s.execute(text("UPDATE copied SET tax_account = :b, lodging_id = :b"), {"b": other})
            await s.execute(text("INSERT INTO lodgings SELECT * FROM copied"))
            await s.commit()

        async def refresh() -> int:
            return await refresh_all_summaries(db, as_of=date(2025, 3, 15))

        waiting = (
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        holder = make_engine(assessment_db, application_name="lock-holder", pool_size=1)
        try:
            async with holder.begin() as conn:
                await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:a))"), {"a": other})
                job = asyncio.create_task(refresh())
                waits = 0
                for _ in range(200):  # up to 10 s for the job to reach the lock
                    waits = (await conn.execute(text(waiting))).scalar_one()
                    if waits or job.done():
                        break
                    await asyncio.sleep(0.05)
                assert not job.done()  # its session (the test's connection) waits for the lock
                assert waits == 1
            assert await asyncio.wait_for(job, 10) >= 2  # the lock released: the job goes on
        finally:
            await holder.dispose()
        assert await rows(
            db, "SELECT period FROM account_summaries WHERE tax_account = :a ORDER BY 1", a=account
        ) == [("2025-01",), ("2025-02",)]


async def test_refresh_commits_each_chunk_and_holds_no_lock_of_it() -> None:
    """The daily refresh commits its accounts a chunk at a time: waiting for one account's
    lock, it holds no lock of the accounts it refreshed before (a consumer batch of them goes
    on), and it never holds one advisory lock per account of the whole platform at once
    (PostgreSQL's lock table would not hold 100,000). On committed data, a database of its own."""
    url = await fresh_database("roomtax_test_assessment_refresh_chunks", MIGRATIONS)
    engine = make_engine(url, application_name="refresh-chunks", pool_size=3)
    sm = make_sessionmaker(engine, service="assessment")
    registry, _, _ = consumers(AssessmentSettings(environment="test", database_url=url), sm, RUNTIME)
    first, held, last = "PR-7300001-0", "PR-7300002-0", "PR-7300003-0"  # refreshed in this order
    await registry.handle_records(consumer_records([lodging_event(a) for a in (first, held, last)]))
    lock = text("SELECT pg_advisory_xact_lock(hashtext(:a))")
    try:
        async with engine.begin() as holder:
            await holder.execute(lock, {"a": held})
            job = asyncio.create_task(refresh_all_summaries(sm, as_of=date(2025, 3, 15), chunk=1))
            waiting = text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
            for _ in range(200):  # up to 10 s for the job to reach the held lock
                if (await holder.execute(waiting)).scalar_one() or job.done():
                    break
                await asyncio.sleep(0.05)
            assert not job.done()
            async with engine.begin() as other:  # the first account's lock is free: its chunk committed
                taken = text("SELECT pg_try_advisory_xact_lock(hashtext(:a))")
                assert (await other.execute(taken, {"a": first})).scalar_one() is True
        assert await asyncio.wait_for(job, 10) == 3
    finally:
        await engine.dispose()
