"""Every read the distribution ledger serves, this checkout against another tree, interleaved.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run --frozen python -u bench/bench_distribution_reads.py \
        --tree /tmp/dist_before [--collections 20000] [--rounds 5] [--repeats 5]

One process per tree (``distribution``, ``servicekit``, ``taxcore`` and the migrations from that
tree), each on a scratch database of its own, populated alike through the service's consumer
(``EventConsumer.handle_records``, batches of the service's size): ``--collections``
``collection.posted`` events, PR but every 100th VI, 500 lodgings, half collected in July 2026
and half in August; then the PR July run is posted over the HTTP API (timed: the month's run,
once per tree). Then ``--rounds`` rounds, the trees alternating which goes first; in a round
each tree warms every read once, then times it (``--repeats`` requests in-process over HTTP and
at least 0.3 s of them: the median wall time, and the CPU per request of the process and the
database's backends from /proc):

* the entries listing: first page, a page after a cursor in the middle, by jurisdiction (PR with a
  cursor, VI), by tax account, by run;
* balances (``account_totals``): the trial balance with and without ``as_of`` and by
  jurisdiction, the fund balances (a fund statement) with and without ``as_of``;
* reports: the fiscal-year summary, the allocations by month, a run's report and its CSV;
* the month's run: a preview of PR August (every undistributed collection read and computed),
  and the same run posted then rolled back (its run_collections rows, entry, lines, triggers);
* reconciliation: every page of the entries listing (500 a page, with their lines) and the
  trial balance, as ``tests/test_platform_month.py::test_ledger_reconciles`` reads them.

Each tree also checks that the responses are the same in both trees (the JSON of every read,
less run ids and timestamps, hashed). At the end each tree prints ``EXPLAIN ANALYZE`` of every
SQL statement the ledger reads issued (captured from the engine), so that a changed plan shows.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka import ConsumerRecord
from bench_distribution import backend_cpu, post_july_run
from httpx import AsyncClient
from sqlalchemy import event as sa_event
from sqlalchemy import text

from distribution.app import build_app
from distribution.consumers import BATCH_SIZE
from distribution.ledger.handlers import COLLECTION_POSTED, on_collection_posted
from distribution.runs.service import run_month
from distribution.settings import DistributionSettings
from servicekit.consumer import EventConsumer
from servicekit.testing import auth, database_url, fresh_database, running_app, test_database_name
from taxcore.events import CloudEvent
from taxcore.parameters import default_tree

ROOT = Path(__file__).resolve().parent.parent
DB = "roomtax_bench_distribution_reads"
ADMIN = auth("agency-admin")
NOW = datetime(2026, 9, 2, 12, tzinfo=UTC)


def collection(i: int) -> CloudEvent:
    j = "VI" if i % 100 == 0 else "PR"
    account = f"{j}-{i % 500:05d}"
    month = 7 + i % 2
    return CloudEvent(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-reads-{i}")),
        source="/roomtax/assessment",
        type=COLLECTION_POSTED,
        time=datetime.now(UTC),
        subject=account,
        data={
            "posting_id": f"bench-{i}",
            "payment_id": f"pay-{i // 3}",
            "tax_account": account,
            "jurisdiction": j,
            "lodging_class": "hotel",
            "period": f"2026-{month - 1:02d}",
            "component": "tax" if i % 10 else "penalty",
            "amount": f"{'-' if i % 97 == 0 else ''}{1000 + i % 997}.{i % 100:02d}",
            "collected_on": date(2026, month, 1 + i % 28).isoformat(),
            "section": "§28" if j == "PR" else "33 V.I.C. §54",
        },
    )


async def populate(app: Any, count: int) -> None:
    consumer = EventConsumer(
        name="bench-reads",
        bootstrap="unused:0",
        topics=[],
        sessionmaker=app.state.sessionmaker,
        handlers={COLLECTION_POSTED: on_collection_posted},
        batch_size=BATCH_SIZE,
        max_attempts=1,
    )
    for start in range(0, count, 500):
        evs = [collection(i) for i in range(start, min(count, start + 500))]
        recs = []
        for k, e in enumerate(evs):
            key, value = (e.subject or "").encode(), e.model_dump_json().encode()
            recs.append(
                ConsumerRecord("collections", 0, start + k, 0, 0, key, value, None, len(key), len(value), ())
            )
        await consumer.handle_records(recs)
    assert (consumer.applied, consumer.parked) == (count, 0), (consumer.applied, consumer.parked)


# run and certification ids (uuids), timestamps and cursors differ between the trees: left out
_VOLATILE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r'|"(posted_at|entered_at|created_at|next_cursor)":\s*("[^"]*"|null)'
)


def digest(body: str) -> str:
    return hashlib.sha256(_VOLATILE.sub("", body).encode()).hexdigest()[:12]


class Reads:
    """The reads, as named requests on the in-process app."""

    def __init__(self, client: AsyncClient, sessionmaker: Any, run_id: str, middle: int) -> None:
        self.client, self.sessionmaker, self.run_id = client, sessionmaker, run_id
        from servicekit.pagination import encode_cursor

        self.cursor = encode_cursor([middle])

    def simple(self) -> dict[str, tuple[str, str, dict[str, str]]]:
        entries, c = "/v1/ledger/entries", self.cursor
        return {
            "entries first page": ("GET", entries, {}),
            "entries after a cursor": ("GET", entries, {"cursor": c}),
            "entries PR after a cursor": ("GET", entries, {"jurisdiction": "PR", "cursor": c}),
            "entries VI": ("GET", entries, {"jurisdiction": "VI"}),
            "entries VI after a cursor": ("GET", entries, {"jurisdiction": "VI", "cursor": c}),
            "entries by tax account": ("GET", entries, {"tax_account": "PR-00007"}),
            "entries by run": ("GET", entries, {"run_id": self.run_id}),
            "trial balance": ("GET", "/v1/ledger/trial-balance", {}),
            "trial balance as_of": ("GET", "/v1/ledger/trial-balance", {"as_of": "2026-07-15"}),
            "trial balance VI": ("GET", "/v1/ledger/trial-balance", {"jurisdiction": "VI"}),
            "funds PR": ("GET", "/v1/funds", {"jurisdiction": "PR", "as_of": "2026-12-01"}),
            "funds PR as_of": ("GET", "/v1/funds", {"jurisdiction": "PR", "as_of": "2026-07-15"}),
            "funds VI": ("GET", "/v1/funds", {"jurisdiction": "VI", "as_of": "2026-12-01"}),
            "fiscal-year summary": ("GET", "/v1/fiscal-years/2027/summary", {"jurisdiction": "PR"}),
            "allocations": ("GET", "/v1/allocations", {"jurisdiction": "PR", "fiscal_year": "2027"}),
            "run report": ("GET", f"/v1/runs/{self.run_id}", {}),
            "run report csv": ("GET", f"/v1/runs/{self.run_id}/report.csv", {}),
        }

    async def request(self, method: str, path: str, params: dict[str, str]) -> str:
        r = await self.client.request(method, path, params=params, headers=ADMIN)
        assert r.status_code == 200, (path, params, r.status_code, r.text[:300])
        return r.text

    async def preview(self) -> str:
        r = await self.client.post(
            "/v1/runs", json={"jurisdiction": "PR", "month": "2026-08", "preview": True}, headers=ADMIN
        )
        assert r.status_code == 200, r.text[:300]
        return r.text

    async def reconcile(self) -> str:
        pages, cursor = [], None
        while True:
            params = {"limit": "500", **({"cursor": cursor} if cursor else {})}
            body = json.loads(await self.request("GET", "/v1/ledger/entries", params))
            pages.extend(body["items"])
            cursor = body["next_cursor"]
            if cursor is None:
                break
        for entry in pages:  # every entry balances on its own
            assert sum((Decimal(x["amount"]) for x in entry["lines"]), Decimal(0)) == 0, entry
        trial = await self.request("GET", "/v1/ledger/trial-balance", {})
        return json.dumps([len(pages), [e["id"] for e in pages if e["kind"] == "collection"][-3:]]) + trial

    async def post_run(self) -> str:
        """The PR August run posted (its reads, its run_collections rows, its entry and lines
        with the ledger's triggers), then rolled back, so that every round posts the same run."""
        async with self.sessionmaker() as session:
            outcome = await run_month(
                session, jurisdiction="PR", month="2026-08", preview=False, law=default_tree(), now=NOW
            )
            await session.flush()
            entry = await session.scalar(
                text(
                    "SELECT count(*) FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id "
                    "WHERE e.run_id = :r"
                ),
                {"r": outcome.run.id},
            )
            await session.rollback()
        return json.dumps([outcome.status, outcome.collections, str(outcome.run.collected), entry])

    def all(self) -> dict[str, Callable[[], Any]]:
        out: dict[str, Callable[[], Any]] = {
            name: (lambda m=m, p=p, q=q: self.request(m, p, q)) for name, (m, p, q) in self.simple().items()
        }
        out["month's run (preview PR 2026-08)"] = self.preview
        out["month's run (PR 2026-08 posted, rolled back)"] = self.post_run
        out["reconciliation (every entries page + trial balance)"] = self.reconcile
        return out


SLOW = ("month's run", "reconciliation")


async def timed(call: Callable[[], Any], repeats: int, pids: list[int]) -> tuple[float, float, str]:
    """The median wall ms of ``repeats`` calls (at least 0.3 s of them, for the CPU clock's
    10 ms ticks) and the CPU ms per call of this process and the database's backends."""
    times, body = [], ""
    cpu, db = time.process_time(), backend_cpu(pids)
    began = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - began < 0.3:
        start = time.perf_counter()
        body = await call()
        times.append((time.perf_counter() - start) * 1000)
    spent = time.process_time() - cpu + backend_cpu(pids) - db
    return statistics.median(times), spent * 1000 / len(times), digest(body)


async def backend_pids(app: Any) -> list[int]:
    async with app.state.sessionmaker() as session:
        rows = await session.execute(
            text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        )
        return [int(p) for p in rows.scalars()]


async def child(args: argparse.Namespace) -> None:
    tree = Path(args.child)
    name = f"{DB}_{args.label}"
    url = await fresh_database(name, tree / "services/distribution/migrations")
    app = build_app(DistributionSettings(environment="test", database_url=url))
    default_tree()
    logging.disable(logging.WARNING)  # the access log of every request
    try:
        async with running_app(app) as client:
            start = time.perf_counter()
            await populate(app, args.collections)
            populated = time.perf_counter() - start
            response, took = await post_july_run(client)
            posted = took * 1000
            run = response.json()
            async with app.state.sessionmaker() as session:
                ids = (await session.execute(text("SELECT min(id), max(id) FROM journal_entries"))).one()
                await session.execute(text("ANALYZE"))
                await session.commit()
            reads = Reads(client, app.state.sessionmaker, run["id"], (ids[0] + ids[1]) // 2)
            calls = reads.all()
            for call in calls.values():  # warm-up: plans, caches
                await call()
            print(
                "READY "
                + json.dumps(
                    {
                        "populate_s": round(populated, 1),
                        "run_post_ms": round(posted),
                        "run_collections": run["inputs"]["collections"],
                        "collected": run["collected"],
                    }
                ),
                flush=True,
            )
            while True:
                command = (await asyncio.to_thread(sys.stdin.readline)).strip()
                if command == "round":
                    out = {}
                    pids = await backend_pids(app)
                    for label, call in calls.items():  # the process sat idle through the other tree's round
                        if not label.startswith(SLOW):
                            await call()
                    for label, call in calls.items():
                        out[label] = await timed(call, 1 if label.startswith(SLOW) else args.repeats, pids)
                    print("RESULT " + json.dumps(out), flush=True)
                elif command == "explain":
                    await explain(app, calls)
                    print("DONE", flush=True)
                else:
                    break
    finally:
        conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
        await conn.execute(f'DROP DATABASE IF EXISTS "{test_database_name(name)}" WITH (FORCE)')
        await conn.close()


async def explain(app: Any, calls: dict[str, Callable[[], Any]]) -> None:
    """EXPLAIN ANALYZE of the SQL each simple read issues (the ledger's queries)."""
    engine = app.state.engine
    statements: list[tuple[str, str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")) and "EXPLAIN" not in statement:
            statements.append((current[0], statement, parameters))

    current = [""]
    sa_event.listen(engine.sync_engine, "before_cursor_execute", grab)
    try:
        for label, call in calls.items():
            if label.startswith("reconciliation"):
                continue
            current[0] = label
            await call()
    finally:
        sa_event.remove(engine.sync_engine, "before_cursor_execute", grab)
    seen: set[tuple[str, str]] = set()
    async with engine.connect() as conn:
        for label, statement, parameters in statements:
            if not re.search(r"journal_|collections|accounts", statement) or (label, statement) in seen:
                continue
            if re.search(r"\b(INSERT|UPDATE|DELETE)\b", statement, re.IGNORECASE):
                # a write (the posted run's entry, a WITH of INSERTs): EXPLAIN ANALYZE would run it
                # again, here for a run rolled back (fk_journal_entries_run_id_runs), and abort the rest
                continue
            seen.add((label, statement))
            result = await conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, COSTS OFF) " + statement, tuple(parameters) if parameters else ()
            )
            print(f"-- {label}\n   " + re.sub(r"\s+", " ", statement)[:400])
            for (line,) in result.all():
                print("   " + line)
        await conn.rollback()


def compare(args: argparse.Namespace) -> None:
    trees = {"before": Path(args.tree).resolve(), "after": ROOT}
    procs: dict[str, subprocess.Popen[str]] = {}
    print(f"load at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    for which, tree in trees.items():  # one after the other: each populates on its own
        paths = [tree / "services/distribution", tree / "libs/servicekit", tree / "libs/taxcore"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
        procs[which] = subprocess.Popen(
            [
                sys.executable,
                "-u",
                __file__,
                f"--child={tree}",
                f"--label={which}",
                f"--collections={args.collections}",
                f"--repeats={args.repeats}",
            ],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = read(procs[which], "READY ")
        print(f"{which} ({tree}, load {os.getloadavg()[0]:.1f}): {line}")
    results: dict[str, dict[str, list[tuple[float, float, str]]]] = {"before": {}, "after": {}}
    try:
        for rnd in range(args.rounds):
            order = ["before", "after"] if rnd % 2 == 0 else ["after", "before"]
            for which in order:
                load = os.getloadavg()[0]
                send(procs[which], "round")
                got = json.loads(read(procs[which], "RESULT "))
                for label, value in got.items():
                    results[which].setdefault(label, []).append(tuple(value))
                print(f"round {rnd + 1} {which} (load {load:.1f}) done")
        print(f"load after the rounds: {os.getloadavg()[0]:.1f}\n")
        print(
            "| read (medians of the rounds) | wall ms before | after | after / before (per round) "
            "| CPU ms before (process + PostgreSQL) | after | after / before (per round) | same body |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for label in results["before"]:
            b, a = results["before"][label], results["after"][label]
            same = {h for *_, h in b} == {h for *_, h in a}
            cells = []
            for k in (0, 1):
                mb, ma = statistics.median(v[k] for v in b), statistics.median(v[k] for v in a)
                per = ", ".join(f"{x[k] / y[k]:.2f}" if y[k] else "-" for x, y in zip(a, b, strict=True))
                cells += [f"{mb:.2f}", f"{ma:.2f}", f"**{ma / mb:.2f}** ({per})" if mb else "-"]
            print(f"| {label} | {' | '.join(cells)} | {'yes' if same else 'NO'} |")
        for which in ("before", "after"):
            print(f"\n### EXPLAIN ANALYZE, {which}")
            send(procs[which], "explain")
            for line in procs[which].stdout:  # type: ignore[union-attr]
                if line.strip() == "DONE":
                    break
                print(line, end="")
    finally:
        for p in procs.values():
            send(p, "quit")
            p.wait(timeout=120)


def send(p: subprocess.Popen[str], command: str) -> None:
    assert p.stdin is not None
    p.stdin.write(command + "\n")
    p.stdin.flush()


def read(p: subprocess.Popen[str], prefix: str) -> str:
    assert p.stdout is not None
    for line in p.stdout:
        if line.startswith(prefix):
            return line.removeprefix(prefix).strip()
    raise RuntimeError(f"child exited ({p.wait()}) before {prefix.strip()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", required=False, help="the checkout to compare with (before)")
    parser.add_argument("--collections", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5, help="requests per read and round (median)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.child:
        asyncio.run(child(parsed))
    else:
        compare(parsed)
