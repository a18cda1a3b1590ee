"""Cross-checks: what they add to the intake of a declaration event.

Run: ``uv run python bench/bench_crosscheck.py [lodgings]`` (default 2,000). Builds a scratch
database (``alembic upgrade head``), registers ``lodgings`` PR short-term rentals, all in one
municipality and class (the worst case for the ADR peer query: every lodging is every other's
peer), then for one period applies, through ``EventConsumer.apply`` with the service's handlers:

1. the operators' returns (half of them timed with cross-checks, half with the cross-check
   replaced by a no-op: the baseline, same run, same handler otherwise), then
2. one intermediary schedule row per lodging (each re-checks its lodging-period against the
   operator's return), again half with and half without.

The ratio is the intake time with cross-checks over the intake without, per event kind. The
scratch database is dropped at the end.
"""

from __future__ import annotations

import asyncio
import sys

import asyncpg
import bench_assessment as ba
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import handlers as intake
from assessment.app import build_app
from assessment.settings import AssessmentSettings
from servicekit.consumer import EventConsumer
from servicekit.testing import PG_ADMIN, fresh_database, running_app, test_database_name
from taxcore.events import CloudEvent

DB = "roomtax_bench_crosscheck"


def operator_return(i: int) -> CloudEvent:
    event, _ = ba.declaration_event(i)
    data = dict(event.data)
    data |= {
        "declaration_id": ba.bench_id("operator-declaration", i),
        "filing_id": ba.bench_id("operator-filing", i),
        "filer_kind": "operator",
        "filer_id": f"op-intake-{i % 500}",
        "schedule_id": None,
    }
    return event.model_copy(update={"data": data, "id": ba.bench_id("operator-event", i)})


async def skip_crosschecks(session: AsyncSession, **kw: object) -> None:
    return None


async def timed(consumer: EventConsumer, events: list[CloudEvent], *, checks: bool) -> float:
    real = intake.run_crosschecks  # type: ignore[attr-defined]
    if not checks:
        intake.run_crosschecks = skip_crosschecks  # type: ignore[attr-defined]
    try:
        return await ba.apply_all(consumer, events, None, 1)
    finally:
        intake.run_crosschecks = real  # type: ignore[attr-defined]


async def main(n: int) -> None:
    url = await fresh_database(DB, ba.MIGRATIONS)
    app = build_app(AssessmentSettings(environment="test", database_url=url))
    try:
        async with running_app(app):
            consumer = EventConsumer(
                name="bench",
                bootstrap="unused:9092",
                topics=[],
                sessionmaker=app.state.sessionmaker,
                handlers={},
                max_attempts=1,
            )
            await ba.apply_all(consumer, [ba.lodging_event(i) for i in range(n)], None, 1)
            half = n // 2
            lines = [f"cross-checks: {n:,} PR short-term rentals in one municipality (all peers), one period"]
            for label, make in (
                ("operator return", operator_return),
                ("intermediary schedule row", lambda i: ba.declaration_event(i)[0]),
            ):
                events = [make(i) for i in range(n)]
                # alternate halves so neither side always runs on the larger table
                without_s = await timed(consumer, events[:half], checks=False)
                with_s = await timed(consumer, events[half:], checks=True)
                lines.append(
                    f"  {label:<28} without {without_s / half * 1000:6.2f} ms/event, "
                    f"with {with_s / (n - half) * 1000:6.2f} ms/event   ratio {with_s / without_s:5.2f}"
                )
            print("\n".join(lines))
    finally:
        conn = await asyncpg.connect(f"{PG_ADMIN}/postgres")
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{test_database_name(DB)}" WITH (FORCE)')
        finally:
            await conn.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000))
