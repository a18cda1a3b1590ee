"""Indicators: ``GET /v1/indicators`` over 10,000 lodgings x 24 periods, against a plain SQL floor.

Run: ``ROOMTAX_TEST_DB_SUFFIX=_me uv run python bench/bench_indicators.py [lodgings] [periods]``
(defaults 10,000 and 24). Builds a scratch database (``alembic upgrade head``) and bulk-loads
(COPY) what the service's consumers would have written for PR lodgings registered
2024-01-01, periods ending 2026-10:

- ``lodgings``: the registry projection (active since registration);
- ``liabilities``: one declaration per lodging-period for 95% of them (5% never filed), filed
  on the due date (85%) or 1-20 days late;
- ``account_summaries``: each declared period's principal and due date;
- ``collection_postings``: 80% paid in full on the due date, 10% half paid on time, 5% paid in
  full late, 5% unpaid;
- 500 dispute cases (opened and decided) and 300 refunds paid;
- an intermediary's schedule row for 10% of the declared lodging-periods (filed with the
  operator's return), 85% of them cross-checked (``crosscheck_runs``; a fifth of those with a
  finding);
- 200 audits opened in the window, 150 of them closed after a notice of audit assessment.

Times the request ``GET /v1/indicators?jurisdiction=PR&from=<first>&to=<last>&as_of=2026-11-30``
in-process (HTTP, the projection read, taxcore's ``must_file`` per lodging-period, the SQL
aggregates). Baseline, same run: one plain SQL statement aggregating the same rows (filed on
time over ``liabilities``, principal and paid over ``account_summaries`` and
``collection_postings``, cases and refunds, audits and their notices, intermediary rows and
cross-check runs) -- the floor of reading them once. Each timing is
the median of 5 runs after one warm-up; the ratio is request / baseline. The scratch database
is dropped at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import asyncpg
from bench_assessment import SUMMARY_COLUMNS
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from assessment.app import build_app
from assessment.indicators.service import audits_and_crosschecks
from assessment.settings import AssessmentSettings
from servicekit.testing import PG_ADMIN, auth, fresh_database, running_app, test_database_name
from taxcore.parameters import default_tree
from taxcore.periods import Period, due_date

MIGRATIONS = Path(__file__).resolve().parent.parent / "services/assessment/migrations"
DB = "roomtax_bench_indicators"
AS_OF = date(2026, 11, 30)
LAST = Period(2026, 10)
TAX = Decimal("9000.00")
NS = uuid.UUID("6a3e2f0c-1d9b-4c57-8e21-5f7a0b3c9d44")


def bid(*parts: object) -> str:
    return str(uuid.uuid5(NS, "|".join(str(p) for p in parts)))


async def median_time(fn: Callable[[], Awaitable[object]], runs: int = 5) -> float:
    await fn()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def periods(n: int) -> list[Period]:
    out = [LAST]
    while len(out) < n:
        p = out[-1]
        out.append(Period(p.year - 1, 12) if p.month == 1 else Period(p.year, p.month - 1))
    return out[::-1]


async def seed(dsn: str, lodgings: int, window: list[Period]) -> None:
    rng = random.Random(10_000)
    now = datetime.now(UTC)
    lodging_rows, liabilities, summaries, postings, runs = [], [], [], [], []
    for i in range(lodgings):
        account = f"PR-{i:07d}-0"
        lodging_rows.append(
            (
                account,
                f"lodging-{i}",
                "PR",
                "hotel",
                False,
                f"Hotel {i}",
                "San Juan",
                40,
                f"op-{i}",
                date(2024, 1, 1),
                json.dumps([{"status": "active", "effective_from": "2024-01-01"}]),
                json.dumps([{"effective_from": "2024-01-01", "lodging_class": "hotel", "casino": False}]),
                now,
            )
        )
        for p in window:
            if rng.random() < 0.05:
                continue  # never filed
            due = due_date("PR", p)
            filed = due if rng.random() < 0.85 else due + timedelta(days=rng.randrange(1, 21))
            liabilities.append(
                (
                    bid("d", account, p),
                    bid("f", account, p),
                    1,
                    None,
                    account,
                    f"lodging-{i}",
                    "PR",
                    "hotel",
                    str(p),
                    "operator",
                    f"op-{i}",
                    filed,
                    True,
                    "{}",
                    Decimal("100000.00"),
                    TAX,
                    Decimal(0),
                    TAX,
                    TAX,
                    Decimal(0),
                    None,
                    "[]",
                    "[]",
                    bid("e", account, p),
                    now,
                )
            )
            if rng.random() < 0.10:  # an intermediary's schedule row, filed with the return
                row = list(liabilities[-1])
                row[:2] = [bid("di", account, p), bid("fi", account, p)]
                row[9:11] = ["facilitator", "fac-1"]
                row[23] = bid("ei", account, p)
                liabilities.append(tuple(row))
                if rng.random() < 0.85:
                    runs.append(
                        (
                            bid("run", account, p),
                            account,
                            "PR",
                            str(p),
                            bid("d", account, p),
                            json.dumps([bid("di", account, p)]),
                            bid("di", account, p),
                            filed,
                            1 if rng.random() < 0.2 else 0,
                        )
                    )
            draw = rng.random()
            paid, on = (
                (TAX, due)
                if draw < 0.8
                else (TAX / 2, due)
                if draw < 0.9
                else (TAX, filed + timedelta(days=5))
            )
            if draw >= 0.95:
                paid = Decimal(0)
            summaries.append(
                (
                    account,
                    str(p),
                    "PR",
                    "hotel",
                    f"op-{i}",
                    due,
                    "declaration",
                    TAX,
                    TAX,
                    paid,
                    TAX - paid,
                    AS_OF,
                    now,
                )
            )
            if paid:
                postings.append(
                    (bid("p", account, p), bid("pay", account, p), account, str(p), "tax", paid, on, "§28")
                )
    conn = await asyncpg.connect(dsn)
    try:
        await conn.copy_records_to_table(
            "lodgings",
            records=lodging_rows,
            columns=[
                "tax_account",
                "lodging_id",
                "jurisdiction",
                "lodging_class",
                "casino",
                "name",
                "municipality",
                "room_count",
                "operator_id",
                "registered_on",
                "statuses",
                "attributes",
                "snapshot_at",
            ],
        )
        await conn.copy_records_to_table(
            "liabilities",
            records=liabilities,
            columns=[
                "declaration_id",
                "filing_id",
                "version",
                "supersedes",
                "tax_account",
                "lodging_id",
                "jurisdiction",
                "lodging_class",
                "period",
                "filer_kind",
                "filer_id",
                "filed_on",
                "books_kept",
                "input",
                "taxable_base",
                "tax",
                "impact_fee",
                "declared_tax",
                "declared_total",
                "deficiency",
                "deficiency_reason",
                "findings",
                "trace",
                "event_id",
                "created_at",
            ],
        )
        await conn.copy_records_to_table(
            "account_summaries",
            records=summaries,
            columns=SUMMARY_COLUMNS,
        )
        await conn.copy_records_to_table(
            "collection_postings",
            records=postings,
            columns=[
                "posting_id",
                "payment_id",
                "tax_account",
                "period",
                "component",
                "amount",
                "collected_on",
                "section",
            ],
        )
        start = window[0].first_day
        cases, steps, refunds, refund_paid = [], [], [], []
        for n in range(500):
            opened = start + timedelta(days=rng.randrange(0, 600))
            account = f"PR-{n:07d}-0"
            cases.append(
                (bid("case", n), account, "PR", str(window[0]), bid("n", n), bid("r", n), TAX, opened, "op")
            )
            decided = opened + timedelta(days=rng.randrange(5, 90))
            steps.append((bid("step", n), bid("case", n), account, "decided", decided, "user:u", "{}"))
        for n in range(300):
            requested = start + timedelta(days=rng.randrange(0, 600))
            account = f"PR-{n:07d}-0"
            refunds.append((bid("refund", n), account, Decimal(10), requested, "op"))
            on = requested + timedelta(days=rng.randrange(1, 60))
            refund_paid.append((bid("rstep", n), bid("refund", n), account, "paid", on, "user:u", "{}"))
        await conn.copy_records_to_table(
            "cases",
            records=cases,
            columns=[
                "id",
                "tax_account",
                "jurisdiction",
                "period",
                "notice_id",
                "response_id",
                "disputed_amount",
                "opened_on",
                "opened_by",
            ],
        )
        step_columns = ["id", "case_id", "tax_account", "step", "on", "by", "details"]
        await conn.copy_records_to_table("case_steps", records=steps, columns=step_columns)
        await conn.copy_records_to_table(
            "refunds",
            records=refunds,
            columns=["id", "tax_account", "amount", "requested_on", "requested_by"],
        )
        await conn.copy_records_to_table(
            "refund_steps", records=refund_paid, columns=["id", "refund_id", *step_columns[2:]]
        )
        await conn.copy_records_to_table(
            "crosscheck_runs",
            records=runs,
            columns=[
                "id",
                "tax_account",
                "jurisdiction",
                "period",
                "declaration_id",
                "intermediary_declarations",
                "intermediaries_key",
                "checked_on",
                "findings",
            ],
        )
        audits, audit_steps = [], []
        end = window[-1].last_day
        for n in range(200):
            account = f"PR-{n * 37 % lodgings:07d}-0"
            opened = start + timedelta(days=rng.randrange(0, (end - start).days - 60))
            audited = json.dumps([str(window[rng.randrange(0, len(window))])])
            audits.append(
                (bid("audit", n), account, "PR", audited, "risk", "risk_score", opened, "user:u", "§9")
            )
            if n < 150:
                extra = Decimal(rng.randrange(10_000, 500_000)) / 100
                closed = opened + timedelta(days=rng.randrange(10, 60))
                for kind, data in (
                    ("notice", {"additional_tax": str(extra)}),
                    ("closed", {"outcome": "assessed"}),
                ):
                    audit_steps.append(
                        (bid(kind, n), bid("audit", n), kind, None, json.dumps(data), closed, "user:u")
                    )
        await conn.copy_records_to_table(
            "audits",
            records=audits,
            columns=[
                "id",
                "tax_account",
                "jurisdiction",
                "periods",
                "reason",
                "source",
                "opened_on",
                "opened_by",
                "section",
            ],
        )
        await conn.copy_records_to_table(
            "audit_steps",
            records=audit_steps,
            columns=["id", "audit_id", "kind", "period", "data", "recorded_on", "recorded_by"],
        )
        for table in (
            "lodgings",
            "liabilities",
            "account_summaries",
            "collection_postings",
            "crosscheck_runs",
        ):
            await conn.execute(f"ANALYZE {table}")
    finally:
        await conn.close()


P6_COLUMNS = """
  (SELECT count(DISTINCT tax_account) FROM audits
    WHERE jurisdiction = 'PR' AND opened_on BETWEEN $3 AND $4) AS audited,
  (SELECT sum((data->>'additional_tax')::numeric) FROM audit_steps
    WHERE kind = 'notice' AND recorded_on BETWEEN $3 AND $4) AS assessed,
  (SELECT count(*) FROM liabilities
    WHERE jurisdiction = 'PR' AND filer_kind = 'facilitator' AND period BETWEEN $1 AND $2) AS with_data,
  (SELECT count(*) FROM crosscheck_runs
    WHERE jurisdiction = 'PR' AND period BETWEEN $1 AND $2) AS checked
"""
P6_BASELINE = "SELECT" + P6_COLUMNS

BASELINE = """
SELECT
  (SELECT count(*) FILTER (WHERE l.filed_on <= s.due_date) FROM liabilities l
     JOIN account_summaries s ON s.tax_account = l.tax_account AND s.period = l.period
    WHERE l.jurisdiction = 'PR' AND l.period BETWEEN $1 AND $2) AS filed_on_time,
  (SELECT count(*) FROM lodgings WHERE jurisdiction = 'PR') AS lodgings,
  (SELECT sum(principal) FROM account_summaries
    WHERE jurisdiction = 'PR' AND period BETWEEN $1 AND $2) AS due,
  (SELECT sum(amount) FROM collection_postings WHERE period BETWEEN $1 AND $2) AS paid,
  (SELECT count(*) FROM cases WHERE jurisdiction = 'PR') AS cases,
  (SELECT count(*) FROM refund_steps WHERE step = 'paid') AS refunds,
"""
BASELINE += P6_COLUMNS


async def main(lodgings: int, n_periods: int) -> None:
    window = periods(n_periods)
    first, last = str(window[0]), str(window[-1])
    url = await fresh_database(DB, MIGRATIONS)
    settings = AssessmentSettings(environment="test", database_url=url)
    t = time.perf_counter()
    await seed(settings.asyncpg_dsn, lodgings, window)
    seed_s = time.perf_counter() - t
    app = build_app(settings)
    agency = auth("agency-auditor")
    figures: dict[str, object] = {}
    try:
        async with running_app(app) as client:

            async def indicators() -> None:
                r = await client.get(
                    "/v1/indicators",
                    params={"jurisdiction": "PR", "from": first, "to": last, "as_of": AS_OF.isoformat()},
                    headers=agency,
                )
                assert r.status_code == 200, r.text
                figures.update({f["name"]: f["value"] for f in r.json()["indicators"]})

            request_s = await median_time(indicators)
        engine = create_async_engine(settings.database_url)
        try:
            async with async_sessionmaker(engine)() as session:

                async def p6() -> None:
                    await audits_and_crosschecks(
                        session, jurisdiction="PR", first=window[0], last=window[-1], law=default_tree()
                    )

                p6_s = await median_time(p6)
        finally:
            await engine.dispose()
        conn = await asyncpg.connect(settings.asyncpg_dsn)
        try:

            async def baseline() -> None:
                await conn.fetchrow(BASELINE, first, last, window[0].first_day, window[-1].last_day)

            baseline_s = await median_time(baseline)

            async def p6_baseline() -> None:
                await conn.fetchrow(P6_BASELINE, first, last, window[0].first_day, window[-1].last_day)

            p6_baseline_s = await median_time(p6_baseline)
        finally:
            await conn.close()
    finally:
        conn = await asyncpg.connect(f"{PG_ADMIN}/postgres")
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{test_database_name(DB)}" WITH (FORCE)')
        finally:
            await conn.close()
    print(f"load: {lodgings:,} lodgings x {n_periods} periods ({first}..{last}) by COPY in {seed_s:.1f} s")
    print(f"  load average: {os.getloadavg()[0]:.1f}")
    print(f"GET /v1/indicators (HTTP, projection, must_file, SQL):  {request_s * 1000:8.1f} ms")
    print(
        f"  baseline: one plain SQL aggregate of the same rows:     {baseline_s * 1000:8.1f} ms"
        f"   ratio {request_s / baseline_s:.2f}"
    )
    print(f"P6 alone (audits_and_crosschecks, ORM queries):       {p6_s * 1000:8.1f} ms")
    print(
        f"  baseline: the P6 part of the plain SQL aggregate:       {p6_baseline_s * 1000:8.1f} ms"
        f"   ratio {p6_s / p6_baseline_s:.2f}"
    )
    for name, value in figures.items():
        print(f"  {name:40s} {value}")


if __name__ == "__main__":
    asyncio.run(
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
            int(sys.argv[2]) if len(sys.argv) > 2 else 24,
        )
    )
