"""Benchmark: remittance schedules of 1,000 / 10,000 / 50,000 rows on the real filing API
process, with the process's peak extra memory.

    uv run python -u bench/bench_filing_schedule.py [--rows 1000 10000 50000] [--repeats 3]
        [--tree NAME=DIR ...] [--no-csv] [--name after]

For each source tree (``after``: this checkout; ``--tree NAME=DIR`` adds another, e.g.
``git archive main | tar -x -C DIR``; its ``libs/servicekit``, ``libs/taxcore`` and
``services/filing`` go first on ``PYTHONPATH``) the bench builds a fresh database
(``roomtax_bench_schedule_<name>``, alembic upgrade head of that tree), seeds the registry
projection with one PR hotel per row, all authorizing one facilitator, and starts
``python -m filing api`` as a process. Then, interleaved (each size, each tree, for
``--repeats`` rounds; every round files another period):

* one JSON schedule of ``rows`` rows (new declarations), then the same document as
  ``text/csv`` (amends every row: version 2). Each is timed from the request to the
  response read, and the API process's RSS (``/proc/<pid>/status`` VmRSS, sampled every
  10 ms; with its descendants', summed: the schedule workers) is read during it: "extra" is
  its peak minus its RSS just before the request; and the CPU seconds of the process and
  its descendants (``/proc/<pid>/stat``) it spent on the request: on a
  shared machine the wall time follows the share of the cores the process gets, its CPU
  time much less. ``--no-csv``: the JSON schedules only. ``--name``: this checkout's name
  (two benches at once need two names: it names their databases).

Baselines in the same run, per tree:

* one single-row ``POST /v1/declarations`` (mean of 50, after 5 warm-up requests) x rows:
  what filing the rows one request at a time would cost;
* a raw ``INSERT ... SELECT`` of the rows a schedule wrote: the floor the database sets
  for writing them.

The summary gives medians of the rounds, rows/s, seconds per 1,000 rows (linear cost:
flat across sizes) and the ratio to the raw insert.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import asyncpg
import httpx
from bench_filing_api import cpu_seconds, stop, wait_ready
from filing_seed import seed_lodgings

from servicekit.testing import free_port, fresh_database, token

ROOT = Path(__file__).resolve().parent.parent
FACILITATOR, OPERATOR = "fac-bench", "op-bench"


async def seed(dsn: str, n: int) -> list[str]:
    accounts = [f"PR-{i:07d}-0" for i in range(1, n + 1)]
    now = datetime.now(UTC)
    conn = await asyncpg.connect(dsn)
    try:
        await seed_lodgings(conn, accounts, operator=OPERATOR, registered_on=date(2020, 1, 1))
        await conn.copy_records_to_table(
            "authorizations",
            columns=["authorization_id", "lodging_id", "tax_account", "facilitator_id", "starts_on", "as_of"],
            records=[
                (str(uuid.uuid4()), f"lodging-{i}", acct, FACILITATOR, date(2020, 1, 1), now)
                for i, acct in enumerate(accounts)
            ],
        )
    finally:
        await conn.close()
    return accounts


def row(i: int, account: str) -> dict[str, object]:
    revenue = 1000 + i % 997
    return {
        "tax_account": account,
        "room_revenue": f"{revenue}.00",
        "resort_and_other_fees": "25.00",
        "intermediary_retained": "150.00",
        "room_nights": 5,
        "declared_tax": f"{(revenue + 25) * 9 / 100:.2f}",
    }


def tree_pids(pid: int) -> list[int]:
    """The process and its descendants (a filing API with schedule workers: its forkserver
    and the workers forked from it)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo.extend(int(c) for c in task.read_text().split())
            except OSError:  # the process or thread ended meanwhile
                continue
    return found


def _rss_one(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def rss_mb(pid: int) -> float:
    """RSS of the process and its descendants, summed (pages shared after a fork counted in
    each: an upper bound)."""
    return sum(_rss_one(p) for p in tree_pids(pid))


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of the process and its live descendants (the schedule workers' included)."""
    total = 0.0
    for p in tree_pids(pid):
        try:
            total += cpu_seconds(p)
        except OSError:
            continue
    return total


class PeakRss:
    """Samples a process's RSS every 10 ms in a thread while a request runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = rss_mb(pid)
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.01)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb(self.pid))

    @property
    def extra(self) -> float:
        return self.peak - self.before


@dataclass
class Tree:
    name: str
    src: Path
    url: str = ""
    dsn: str = ""
    proc: subprocess.Popen[bytes] | None = None
    base: str = ""
    single_ms: float = 0.0
    #: (rows, "json" | "csv") -> [(seconds, extra RSS MB, API CPU seconds)]
    runs: dict[tuple[int, str], list[tuple[float, float, float]]] = field(default_factory=dict)
    raw: dict[int, list[float]] = field(default_factory=dict)


def start_api(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "filing", "api", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def start(tree: Tree, n: int) -> None:
    tree.url = await fresh_database(
        f"roomtax_bench_schedule_{tree.name}", tree.src / "services" / "filing" / "migrations"
    )
    tree.dsn = tree.url.replace("postgresql+asyncpg://", "postgresql://")
    await seed(tree.dsn, n)
    path = [str(tree.src / d) for d in ("libs/servicekit", "libs/taxcore", "services/filing")]
    env = dict(os.environ, FILING_DATABASE_URL=tree.url, ROOMTAX_LOG_LEVEL="WARNING")
    env["PYTHONPATH"] = os.pathsep.join(path)
    port = free_port()
    tree.proc = start_api(port, env)
    tree.base = f"http://127.0.0.1:{port}"
    await wait_ready(tree.base, tree.proc, timeout=900)  # seeding and start-up on a loaded machine


async def single_posts(client: httpx.AsyncClient, tree: Tree, accounts: list[str]) -> None:
    as_op = {"Authorization": f"Bearer {token('operator', operator_id=OPERATOR)}"}
    times = []
    for i in range(55):
        body = {
            "lodging": accounts[i],
            "period": "2020-01",
            "room_revenue": "1000.00",
            "room_nights": 5,
            "declared": {"tax": "90.00"},
        }
        t0 = time.perf_counter()
        r = await client.post(f"{tree.base}/v1/declarations", json=body, headers=as_op)
        assert r.status_code == 201, r.text
        if i >= 5:
            times.append(time.perf_counter() - t0)
    tree.single_ms = statistics.mean(times) * 1000


async def schedule(
    client: httpx.AsyncClient, tree: Tree, rows: list[dict[str, object]], period: str, *, csv: bool
) -> None:
    assert tree.proc is not None
    n = len(rows)
    as_fac = {"Authorization": f"Bearer {token('facilitator', facilitator_id=FACILITATOR)}"}
    cpu0 = tree_cpu_seconds(tree.proc.pid)
    with PeakRss(tree.proc.pid) as mem:
        t0 = time.perf_counter()
        r = await client.post(
            f"{tree.base}/v1/remittance-schedules", json={"period": period, "rows": rows}, headers=as_fac
        )
        seconds = time.perf_counter() - t0
    assert r.status_code == 201, r.text[:500]
    out = r.json()
    assert out["accepted"] == n, (out["accepted"], str(out)[:500])
    tree.runs.setdefault((n, "json"), []).append((seconds, mem.extra, tree_cpu_seconds(tree.proc.pid) - cpu0))
    schedule_id = out["id"]
    del out, r
    if csv:
        await amend_by_csv(client, tree, rows, period, as_fac)
    await raw_insert(tree, n, schedule_id)


async def amend_by_csv(
    client: httpx.AsyncClient, tree: Tree, rows: list[dict[str, object]], period: str, as_fac: dict[str, str]
) -> None:
    assert tree.proc is not None
    n = len(rows)

    cpu0 = tree_cpu_seconds(tree.proc.pid)
    header = list(rows[0])
    csv_text = ",".join(header) + "\n" + "\n".join(",".join(str(x[h]) for h in header) for x in rows) + "\n"
    with PeakRss(tree.proc.pid) as mem:
        t0 = time.perf_counter()
        r = await client.post(
            f"{tree.base}/v1/remittance-schedules",
            params={"period": period},
            content=csv_text,
            headers={**as_fac, "content-type": "text/csv"},
        )
        seconds = time.perf_counter() - t0
    assert r.status_code == 201, r.text[:500]
    assert r.json()["accepted"] == n
    tree.runs.setdefault((n, "csv"), []).append((seconds, mem.extra, tree_cpu_seconds(tree.proc.pid) - cpu0))


async def raw_insert(tree: Tree, n: int, schedule_id: str) -> None:
    conn = await asyncpg.connect(tree.dsn)
    try:
        names = ", ".join(
            c["column_name"]
            for c in await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'declarations' "
                "AND column_name NOT IN ('id', 'seq', 'filing_id', 'version', 'supersedes') "
                "ORDER BY ordinal_position"
            )
        )
        t0 = time.perf_counter()
        async with conn.transaction():
            await conn.execute(
                f"INSERT INTO declarations (id, filing_id, version, {names}) "
                f"SELECT gen_random_uuid()::text, gen_random_uuid()::text, 1, {names} "
                "FROM declarations WHERE schedule_id = $1",
                schedule_id,
            )
            tree.raw.setdefault(n, []).append(time.perf_counter() - t0)
            raise _Undo
    except _Undo:
        pass
    finally:
        await conn.close()


class _Undo(Exception):  # noqa: N818 - rolls the raw insert back (the next rounds file again)
    pass


async def main(args: argparse.Namespace) -> None:
    sizes: list[int] = sorted(args.rows)
    trees = [Tree(args.name, ROOT)] + [
        Tree(name, Path(os.path.abspath(d)))  # noqa: ASYNC240 - once, before any load
        for name, d in (t.split("=", 1) for t in args.tree)
    ]
    periods = [f"{2020 + k // 12:04d}-{k % 12 + 1:02d}" for k in range(1, 1 + args.repeats * len(sizes))]
    accounts = [f"PR-{i:07d}-0" for i in range(1, max(sizes) + 1)]
    try:
        for tree in trees:
            await start(tree, max(sizes))
        print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)", flush=True)
        async with httpx.AsyncClient(timeout=600) as client:
            for tree in trees:
                await single_posts(client, tree, accounts)
            k = 0
            for rep in range(args.repeats):
                for n in sizes:
                    rows = [row(i, a) for i, a in enumerate(accounts[:n])]
                    for tree in trees:
                        await schedule(client, tree, rows, periods[k], csv=args.csv)
                        js, jm, jc = tree.runs[(n, "json")][-1]
                        line = (
                            f"round {rep + 1} {n:>6} rows {tree.name:10}: "
                            f"JSON {js:7.2f} s, CPU {jc:6.2f} s (+{jm:5.0f} MB)"
                        )
                        if args.csv:
                            cs, cm, cc = tree.runs[(n, "csv")][-1]
                            line += f"  CSV amend {cs:7.2f} s, CPU {cc:6.2f} s (+{cm:5.0f} MB)"
                        print(f"{line}  raw insert {tree.raw[n][-1]:6.3f} s", flush=True)
                    k += 1
        print(f"load after: {os.getloadavg()[0]:.1f}")
        print()
        print(
            "| rows | tree | JSON s | API CPU s | CPU s per 1k rows | rows/s | extra RSS MB (median / max) "
            "| CSV amend s, CPU s | CSV extra MB (max) | raw insert s | JSON / raw | JSON / single POSTs |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n in sizes:
            for tree in trees:
                runs = tree.runs[(n, "json")]
                js = statistics.median(s for s, _, _ in runs)
                jc = statistics.median(c for _, _, c in runs)
                jm = [m for _, m, _ in runs]
                csv_runs = tree.runs.get((n, "csv"), [])
                csv_cell, csv_mem = "-", "-"
                if csv_runs:
                    cs = statistics.median(s for s, _, _ in csv_runs)
                    cc = statistics.median(c for _, _, c in csv_runs)
                    csv_cell, csv_mem = f"{cs:.2f}, {cc:.2f}", f"{max(m for _, m, _ in csv_runs):.0f}"
                raw = statistics.median(tree.raw[n])
                print(
                    f"| {n:,} | {tree.name} | {js:.2f} | {jc:.2f} | {jc * 1000 / n:.3f} | {n / js:,.0f} "
                    f"| {statistics.median(jm):.0f} / {max(jm):.0f} | {csv_cell} | {csv_mem} "
                    f"| {raw:.3f} | {js / raw:.1f} | {js / (tree.single_ms / 1000 * n):.3f} |"
                )
        for tree in trees:
            print(f"single-row POST /v1/declarations, {tree.name}: {tree.single_ms:.2f} ms")
    finally:
        for tree in trees:
            if tree.proc is not None:
                stop(tree.proc)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="NAME=DIR: another source tree")
    parser.add_argument("--name", default="after", help="this checkout's name (and its database's)")
    parser.add_argument("--no-csv", dest="csv", action="store_false", help="only the JSON schedules")
    asyncio.run(main(parser.parse_args()))
