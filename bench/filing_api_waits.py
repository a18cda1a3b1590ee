"""Where the slow ``POST /v1/declarations`` wait: the real API process, timed from inside.

    uv run python bench/filing_api_waits.py [--conns 32] [--seconds 8] [--tree DIR ...]

For each tree (this one, ``.``, and every ``--tree``, interleaved ``--rounds`` times) a fresh
database as ``bench_filing_api.py`` seeds it, then ``python -m filing api`` with this file
as a wrapper (``--serve``): the direct handler's pool checkout is timed (how long it waited
for a connection, how long it held it), so is the request inside the app, and every garbage
collection (``gc.callbacks``). ``wrk`` loads it (``declarations.lua``, mode ``new``) after a
3 s warm-up at c8; the wrapper writes its timings when the server stops, and the percentiles
are printed beside wrk's. Session 11 (issue 12): the p99 at c32 was the pool's waiters (see
``results/filing_api_2026-12-03_s11_post_pool_wait_c32.txt``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SELF = str(Path(__file__).resolve())


def serve(out: str) -> None:
    """``python -m filing api`` with the timings (run as ``--serve OUT api --port P``)."""
    import filing.declarations.endpoints as endpoints
    import servicekit.db as db
    from filing.__main__ import SPEC
    from servicekit.cli import main

    records: list[tuple[float, float, float, float]] = []  # start, wait, held, total (s)
    pauses: list[tuple[int, float, float]] = []  # generation, pause (s), start
    started = [0.0]

    def collected(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append((info["generation"], time.perf_counter() - started[0], started[0]))

    gc.callbacks.append(collected)
    checkout = endpoints.pool_connection

    @contextlib.asynccontextmanager
    async def timed(request: Any) -> AsyncIterator[Any]:
        t0 = time.perf_counter()
        async with checkout(request) as conn:
            t1 = time.perf_counter()
            try:
                yield conn
            finally:
                request.scope["bench.pool"] = (t1 - t0, time.perf_counter() - t1)

    endpoints.pool_connection = timed  # type: ignore[assignment]
    front = db.DirectRoutes.__call__

    async def call(self: Any, scope: Any, receive: Any, send: Any) -> None:
        t0 = time.perf_counter()
        await front(self, scope, receive, send)
        if "bench.pool" in scope:
            records.append((t0, *scope["bench.pool"], time.perf_counter() - t0))

    db.DirectRoutes.__call__ = call  # type: ignore[method-assign]

    def dump(*_: object) -> None:
        Path(out).write_text(json.dumps({"records": records, "pauses": pauses}))
        os._exit(0)

    signal.signal(signal.SIGTERM, dump)  # uvicorn re-raises the signal it stopped on
    main(SPEC)
    dump()


def _q(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def report(path: str) -> list[str]:
    data = json.loads(Path(path).read_text())
    rec = data["records"]
    lines = []
    for name, i in (("pool wait", 1), ("connection held", 2), ("in the app", 3)):
        xs = [r[i] for r in rec]
        lines.append(
            f"  {name:16} p50 {_q(xs, 0.5):7.1f}  p90 {_q(xs, 0.9):7.1f}  p99 {_q(xs, 0.99):7.1f}  "
            f"p99.9 {_q(xs, 0.999):7.1f}  max {max(xs) * 1000:7.1f} ms"
        )
    slow = sorted(rec, key=lambda r: -r[3])[: max(1, len(rec) // 100)]
    mean = [1000 * sum(r[i] for r in slow) / len(slow) for i in (1, 2, 3)]
    lines.append(f"  slowest 1%: waited {mean[0]:.1f}, held {mean[1]:.1f}, in the app {mean[2]:.1f} ms")
    first = min(r[0] for r in rec)
    loaded = [p for p in data["pauses"] if p[2] >= first]  # not the start-up's collections
    worst = max((p[1] for p in loaded), default=0.0) * 1000
    lines.append(f"  collections during the load: {len(loaded)}, longest {worst:.2f} ms")
    return lines


async def run(tree: Path, conns: int, seconds: int) -> list[str]:
    sys.path.insert(0, str(HERE))
    import bench_filing_api as b

    from servicekit.testing import free_port, fresh_database, token

    url = await fresh_database("roomtax_bench_waits", tree / "services" / "filing" / "migrations")
    await b.seed(url.replace("postgresql+asyncpg://", "postgresql://"), 2000)
    out = str(Path(tempfile.gettempdir()) / f"filing_api_waits_{uuid.uuid4().hex}.json")
    port = free_port()
    path = [str(tree / d) for d in ("libs/servicekit", "libs/taxcore", "services/filing")]
    env = dict(
        os.environ, FILING_DATABASE_URL=url, ROOMTAX_LOG_LEVEL="WARNING", PYTHONPATH=os.pathsep.join(path)
    )
    cmd = [sys.executable, SELF, "--serve", out, "api", "--port", str(port)]
    proc = b.start(cmd, env)
    target = f"http://127.0.0.1:{port}"
    try:
        await b.wait_ready(target, proc)
        bearer = token("operator", operator_id=b.OPERATOR, client_id=f"bench-{uuid.uuid4().hex[:8]}")
        warm = b.wrk(target, 8, 3, bearer, 2000, 0, "new")
        r = b.wrk(target, conns, seconds, bearer, 2000, warm.requests + 200, "new")
    finally:
        b.stop(proc)
    load = os.getloadavg()[0]
    head = (
        f"{tree}: c{conns} {r.rps:.0f} req/s, wrk p50 {r.p50_ms:.1f} p99 {r.p99_ms:.1f} ms, load {load:.1f}"
    )
    return [head, *report(out)]


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        out = sys.argv[2]
        del sys.argv[1:3]
        serve(out)
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--conns", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", action="append", default=[], help="another source tree, interleaved")
    args = parser.parse_args()
    trees = [HERE.parent, *(Path(t).resolve() for t in args.tree)]
    for _ in range(args.rounds):
        for tree in trees:
            print("\n".join(asyncio.run(run(tree, args.conns, args.seconds))), flush=True)


if __name__ == "__main__":
    main()
