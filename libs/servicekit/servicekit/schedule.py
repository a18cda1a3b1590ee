"""Daily jobs that run once per schedule across every replica of a worker.

A worker runs with several replicas (three in production); a loop in each would run a
daily job once per replica, at whatever time its pod started. Instead every replica
runs :func:`scheduled_daily`: at the configured local time (:class:`DailySchedule`)
it tries to become the job's leader with a PostgreSQL session advisory lock
(``pg_try_advisory_lock``), and the leader records the run in ``job_runs``
(``job``, ``scheduled_for``). A replica that does not get the lock, or finds the
day's run finished, does nothing: the job runs once per scheduled day. A run that
failed (or whose replica died: the lock goes with its connection) is taken again
by the next replica to look, after ``retry_seconds``. A worker that starts after the
day's time with no finished run for the day runs it then (catch-up), once.

The jobs themselves stay idempotent (running one twice changes nothing); the leader
only keeps the replicas from doing the same work at once, every day.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from alembic import op
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("servicekit.schedule")

Outcome = Literal["ran", "done", "busy", "failed"]
Work = Callable[[date], Awaitable[object]]


def create_job_runs_table() -> None:
    """The ``job_runs`` table (a service migration calls this once)."""
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "job_runs",
        sa.Column("job", sa.Text, primary_key=True),
        sa.Column("scheduled_for", sa.Date, primary_key=True),
        sa.Column("runner", sa.Text, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
        sa.Column("error", sa.Text),
    )


def drop_job_runs_table() -> None:
    op.drop_table("job_runs")


@dataclass(frozen=True, slots=True)
class DailySchedule:
    """Every day at ``at`` in ``timezone`` (an IANA name: the agency's own clock)."""

    at: time
    timezone: str = "UTC"

    def latest_due(self, now: datetime) -> date:
        """The last day whose scheduled time is not after ``now`` (aware)."""
        local = now.astimezone(ZoneInfo(self.timezone))
        return local.date() if local.time() >= self.at else local.date() - timedelta(days=1)

    def next_after(self, now: datetime) -> datetime:
        """The first scheduled instant after ``now``."""
        day = self.latest_due(now) + timedelta(days=1)
        return datetime.combine(day, self.at, tzinfo=ZoneInfo(self.timezone))


def lock_key(job: str) -> str:
    return f"roomtax.job.{job}"


async def run_once(engine: AsyncEngine, *, job: str, scheduled_for: date, runner: str, work: Work) -> Outcome:
    """Run ``work(scheduled_for)`` unless another replica holds the job or finished that day."""
    async with engine.connect() as conn:
        leader = await conn.scalar(text("SELECT pg_try_advisory_lock(hashtext(:k))"), {"k": lock_key(job)})
        await conn.commit()
        if not leader:
            return "busy"
        try:
            finished = await conn.scalar(
                text("SELECT finished_at FROM job_runs WHERE job = :j AND scheduled_for = :d"),
                {"j": job, "d": scheduled_for},
            )
            if finished is not None:
                await conn.commit()
                return "done"
            await conn.execute(
                text(
                    "INSERT INTO job_runs (job, scheduled_for, runner, started_at) "
                    "VALUES (:j, :d, :r, now()) "
                    "ON CONFLICT (job, scheduled_for) DO UPDATE SET runner = EXCLUDED.runner, "
                    "started_at = now(), attempts = job_runs.attempts + 1, error = NULL"
                ),
                {"j": job, "d": scheduled_for, "r": runner},
            )
            await conn.commit()
            try:
                await work(scheduled_for)
            except Exception as exc:  # noqa: BLE001 - recorded, retried by the next look
                log.exception("job %s for %s failed on %s", job, scheduled_for, runner)
                await conn.execute(
                    text("UPDATE job_runs SET error = :e WHERE job = :j AND scheduled_for = :d"),
                    {"e": f"{type(exc).__name__}: {exc}"[:4000], "j": job, "d": scheduled_for},
                )
                await conn.commit()
                return "failed"
            await conn.execute(
                text("UPDATE job_runs SET finished_at = now() WHERE job = :j AND scheduled_for = :d"),
                {"j": job, "d": scheduled_for},
            )
            await conn.commit()
            log.info("job %s for %s ran on %s", job, scheduled_for, runner)
            return "ran"
        finally:
            await conn.execute(text("SELECT pg_advisory_unlock(hashtext(:k))"), {"k": lock_key(job)})
            await conn.commit()


async def scheduled_daily(
    engine: AsyncEngine,
    stop: asyncio.Event,
    *,
    job: str,
    schedule: DailySchedule,
    runner: str,
    work: Work,
    retry_seconds: float = 300.0,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """Every replica runs this loop; ``work`` runs once per scheduled day across them all."""
    while not stop.is_set():
        outcome: Outcome
        try:
            outcome = await run_once(
                engine, job=job, scheduled_for=schedule.latest_due(now()), runner=runner, work=work
            )
        except Exception:  # noqa: BLE001 - e.g. the database is down: look again later
            log.exception("job %s: could not check its schedule", job)
            outcome = "failed"
        wait = min((schedule.next_after(now()) - now()).total_seconds(), 3600.0)  # re-read the clock hourly
        if outcome in ("failed", "busy"):  # busy: the leader may still fail; look again
            wait = min(wait, retry_seconds)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=max(wait, 1.0))
