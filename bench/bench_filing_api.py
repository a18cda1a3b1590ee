"""Benchmark: ``POST /v1/declarations`` on the real filing API process against a bare app.

    uv run python bench/bench_filing_api.py [--repeats 3] [--seconds 10] [--lodgings 2000]

Starts, side by side on free ports:

* the filing API as it is deployed, ``python -m filing api --port P`` (uvicorn), on a
  fresh database (``roomtax_bench_api``, alembic upgrade head) whose registry projection
  holds ``--lodgings`` PR lodgings of one operator (registered 2014-01-01);
* the baseline, ``bench/baseline_app.py``: FastAPI + asyncpg inserting the JSON body
  in one statement (its own fresh database).

Both are loaded by the same ``wrk`` (``apt-get install -y wrk``) with
``bench/declarations.lua``, which POSTs a 10-line PR declaration per request with an
operator token from ``servicekit.testing.token``:

* ``new``: every request a different lodging or period (no amendments);
* ``amend``: every request a new version of an existing filing (period 2014-12 of
  each lodging, filed once before the runs).

Runs are interleaved (Roomtax, baseline, Roomtax, ...) for ``--repeats`` rounds; each
line prints req/s, p50 and p99, and the summary the medians and the ratio
Roomtax/baseline of the same run. Non-2xx responses are counted and reported (a
Roomtax 409 is two amendments of one filing in flight at once).

Each line also gives the server process's CPU time per request (``/proc/<pid>/stat``
before and after the run, divided by the requests served): on a shared machine whose
load swings, it moves far less than req/s, so its ratio is the steadier figure.

``--before DIR``: a third server, ``before``, runs the filing API from another source
tree (e.g. ``git archive <commit> | tar -x -C DIR``; its ``libs/servicekit``,
``libs/taxcore`` and ``services/filing`` go first on ``PYTHONPATH``) on its own fresh
database, interleaved with the other two: before/after in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import asyncpg
import httpx
from filing_seed import seed_lodgings

from servicekit.testing import database_url, free_port, fresh_database, test_database_name, token

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "services" / "filing" / "migrations"
LUA = Path(__file__).resolve().parent / "declarations.lua"
OPERATOR = "op-bench"
THREADS = 2


async def seed(dsn: str, n: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        accounts = [f"PR-{i + 1:07d}-0" for i in range(n)]
        await seed_lodgings(conn, accounts, operator=OPERATOR, registered_on=date(2014, 1, 1))
    finally:
        await conn.close()


async def baseline_database() -> str:
    name = test_database_name("roomtax_bench_baseline")
    conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return database_url(name, driver="postgresql")


def start(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


async def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"{url} exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
                )
            try:
                if (await client.get(f"{url}/readyz", timeout=2)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout} s")


@dataclass
class Run:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    cpu_ms: float = 0.0  # server CPU per request


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    assert m, text
    return float(m[1]) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[m[2]]


def wrk(url: str, conns: int, seconds: int, bearer: str, lodgings: int, offset: int, mode: str) -> Run:
    out = subprocess.run(
        [
            "wrk",
            f"-t{THREADS}",
            f"-c{conns}",
            f"-d{seconds}s",
            "--latency",
            "-s",
            str(LUA),
            f"{url}/v1/declarations",
            "--",
            bearer,
            str(lodgings),
            str(offset),
            mode,
            str(THREADS),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M)[1])  # type: ignore[index]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M)[1])  # type: ignore[index]
    requests = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return Run(rps, p50, p99, requests, int(bad[1]) if bad else 0)


async def prefile(url: str, bearer: str, lodgings: int) -> None:
    """Version 1 of period 2014-12 for every lodging, so the ``amend`` runs only amend."""
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {bearer}"}) as client:
        sem = asyncio.Semaphore(8)

        async def one(i: int) -> None:
            async with sem:
                r = await client.post(
                    "/v1/declarations",
                    json={
                        "lodging": f"PR-{i + 1:07d}-0",
                        "period": "2014-12",
                        "room_revenue": "1000.00",
                        "room_nights": 5,
                        "declared": {"tax": "90.00"},
                    },
                    timeout=60,
                )
                assert r.status_code == 201, r.text

        await asyncio.gather(*(one(i) for i in range(lodgings)))


async def main(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")
    url = await fresh_database("roomtax_bench_api", MIGRATIONS)
    await seed(url.replace("postgresql+asyncpg://", "postgresql://"), args.lodgings)
    base_dsn = await baseline_database()
    env = dict(os.environ, FILING_DATABASE_URL=url, ROOMTAX_LOG_LEVEL="WARNING")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    targets: dict[str, str] = {}
    if args.before:
        src = Path(os.path.abspath(args.before))  # noqa: ASYNC240 - once, before any load
        before_url = await fresh_database(
            "roomtax_bench_api_before", src / "services" / "filing" / "migrations"
        )
        await seed(before_url.replace("postgresql+asyncpg://", "postgresql://"), args.lodgings)
        path = [str(src / d) for d in ("libs/servicekit", "libs/taxcore", "services/filing")]
        port = free_port()
        before_env = dict(env, FILING_DATABASE_URL=before_url, PYTHONPATH=os.pathsep.join(path))
        procs["before"] = start([sys.executable, "-m", "filing", "api", "--port", str(port)], before_env)
        targets["before"] = f"http://127.0.0.1:{port}"
    port = free_port()
    procs["roomtax"] = start([sys.executable, "-m", "filing", "api", "--port", str(port)], env)
    targets["roomtax"] = f"http://127.0.0.1:{port}"
    port = free_port()
    baseline_cmd = [sys.executable, str(ROOT / "bench" / "baseline_app.py"), "--port", str(port)]
    procs["baseline"] = start([*baseline_cmd, "--dsn", base_dsn], env)
    targets["baseline"] = f"http://127.0.0.1:{port}"
    try:
        for name, u in targets.items():
            await wait_ready(u, procs[name])
        bearer = token("operator", operator_id=OPERATOR, client_id=f"bench-{uuid.uuid4().hex[:8]}")
        for name in ("before", "roomtax"):
            if name in targets:
                await prefile(targets[name], bearer, args.lodgings)
        print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
        offsets = dict.fromkeys(targets, 0)
        # warm-up: both processes, a few seconds each (pool, caches, JIT-less but lazy imports)
        for name, u in targets.items():
            r = wrk(u, 8, 3, bearer, args.lodgings, offsets[name], "new")
            offsets[name] += r.requests + 200
        cases = [(8, "new"), (32, "new"), (32, "amend")]
        results: dict[tuple[int, str, str], list[Run]] = {}
        for rep in range(args.repeats):
            for conns, mode in cases:
                for name, u in targets.items():
                    offset = offsets[name] if mode == "new" else rep * 7919
                    cpu0 = cpu_seconds(procs[name].pid)
                    r = wrk(u, conns, args.seconds, bearer, args.lodgings, offset, mode)
                    r.cpu_ms = (cpu_seconds(procs[name].pid) - cpu0) * 1000 / max(1, r.requests)
                    if mode == "new":
                        offsets[name] += r.requests + 200
                    results.setdefault((conns, mode, name), []).append(r)
                    print(
                        f"round {rep + 1} {mode:5} c{conns:<2} {name:8}: {r.rps:8.1f} req/s  "
                        f"p50 {r.p50_ms:7.1f} ms  p99 {r.p99_ms:7.1f} ms  CPU {r.cpu_ms:5.2f} ms/req  "
                        f"non-2xx {r.errors}",
                        flush=True,
                    )
        print(f"load after: {os.getloadavg()[0]:.1f}")
        print()
        print(
            "| measure | server | req/s | p50 ms | p99 ms | CPU ms/req | req/s ratio to baseline "
            "| ratio range per round | CPU ratio to baseline |"
        )
        print("|---|---|---|---|---|---|---|---|---|")

        def med(runs: list[Run], attr: str) -> float:
            return float(statistics.median(getattr(x, attr) for x in runs))

        for conns, mode in cases:
            bl = results[(conns, mode, "baseline")]
            label = "new declaration" if mode == "new" else "amendment"
            for name in targets:
                rt = results[(conns, mode, name)]
                per_round = [a.rps / b.rps for a, b in zip(rt, bl, strict=True)]
                errors = sum(x.errors for x in rt)
                print(
                    f"| {label}, c{conns} | {name} | {med(rt, 'rps'):.0f} | {med(rt, 'p50_ms'):.1f} "
                    f"| {med(rt, 'p99_ms'):.1f} | {med(rt, 'cpu_ms'):.2f} "
                    f"| **{med(rt, 'rps') / med(bl, 'rps'):.3f}** "
                    f"| {min(per_round):.3f}-{max(per_round):.3f} "
                    f"| {med(rt, 'cpu_ms') / med(bl, 'cpu_ms'):.1f}x |"
                    + (f" ({errors} non-2xx)" if errors else "")
                )
    finally:
        for proc in procs.values():
            stop(proc)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--lodgings", type=int, default=2000)
    parser.add_argument("--before", default=None, help="a source tree to run as the 'before' server")
    asyncio.run(main(parser.parse_args()))
