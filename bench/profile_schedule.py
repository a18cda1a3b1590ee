"""In-process profile of a remittance schedule: ``accept_schedule`` of N rows against a real
database, with the CPU per row split by stage.

    uv run python -u bench/profile_schedule.py [--rows 10000] [--repeats 3] [--no-stages]
        [--tree NAME=DIR ...]

For each source tree (``after``: this checkout; ``--tree NAME=DIR`` adds another, e.g.
``git archive main | tar -x -C DIR``) a child process builds a fresh database
(``roomtax_profile_schedule_<name>``, alembic upgrade head of that tree), seeds the
registry projection as ``bench_filing_schedule.py`` does (one PR hotel per row, all
authorizing one facilitator), freezes the heap and sets the collector's thresholds
(``servicekit.cli.API_GC_THRESHOLDS``) as ``python -m filing api`` does, and calls
``filing.schedules.service.accept_schedule`` on ``--rows`` JSON rows (new declarations) in a
transaction that commits, ``--repeats`` times (each round files another period). The trees
run alternately, round by round, so the load they see is the same.

Per round it reports the process's CPU (``time.process_time``: every thread, the worker
thread that computes chunks included), the PostgreSQL backend's CPU (``/proc/<pid>/stat`` of
``pg_backend_pid()``) and wall seconds. With stages on (the default), the functions named in
:data:`STAGES` are wrapped where the tree has them and each call's thread CPU time
(``time.thread_time``) is summed: a stage's figure is its own thread's CPU, so the worker
thread's GIL waits do not count, but a nested stage is also inside its parent's. The wrapping
costs ~1 us per call (``--no-stages`` for the plain total).

The summary prints the medians per tree, the ratio to the first ``--tree`` (the baseline), and
the stages in microseconds per row.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import gc
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: (module, attribute) wrapped to time a stage; attributes a tree lacks are skipped
STAGES: tuple[tuple[str, str], ...] = (
    ("filing.schedules.service", "_looked_up"),
    ("filing.schedules.service", "_parse"),
    ("filing.schedules.service", "_screen"),
    ("filing.schedules.service", "filing_id"),
    ("filing.schedules.service", "_compute"),
    ("filing.schedules.service", "recompute"),
    ("filing.schedules.service", "declaration_row"),
    ("filing.schedules.repository", "declaration_record"),
    ("filing.schedules.service", "declaration_event"),
    ("filing.schedules.service", "outbox_row"),
    ("filing.schedules.service", "outbox_record"),
    ("filing.schedules.service", "_write"),
    ("filing.schedules.repository", "copy_declarations"),
    ("filing.schedules.repository", "copy_events"),
    ("filing.schedules.service", "emit_many"),
    ("filing.schedules.service", "emit_rows"),
    ("servicekit.outbox", "_rows"),
    ("filing.schedules.service", "to_json"),
    ("filing.schedules.repository", "insert_schedule"),
)


def _wrap(times: dict[str, float], calls: dict[str, int], name: str, fn: Any) -> Any:
    if asyncio.iscoroutinefunction(fn):
        # an awaited stage: its CPU on the event loop's thread between its awaits and the
        # others' is not separable; thread CPU from start to end includes what ran meanwhile
        # on this thread (the loop runs nothing else here)
        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.thread_time()
            try:
                return await fn(*args, **kwargs)
            finally:
                times[name] += time.thread_time() - t0
                calls[name] += 1

        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            times[name] += time.thread_time() - t0
            calls[name] += 1

    return wrapper


@contextlib.contextmanager
def staged(times: dict[str, float], calls: dict[str, int]) -> Iterator[None]:
    undo: list[Callable[[], None]] = []
    started: list[float] = []

    def collecting(phase: str, info: dict[str, int]) -> None:  # the collector's own CPU
        if phase == "start":
            started.append(time.thread_time())
        elif started:
            times[f"gc (generation {info['generation']})"] += time.thread_time() - started.pop()
            calls[f"gc (generation {info['generation']})"] += 1

    gc.callbacks.append(collecting)
    undo.append(functools.partial(gc.callbacks.remove, collecting))
    for mod_name, attr in STAGES:
        mod = importlib.import_module(mod_name)
        fn = getattr(mod, attr, None)
        if fn is None:
            continue
        setattr(mod, attr, _wrap(times, calls, f"{mod_name.rsplit('.', 1)[-1]}.{attr}", fn))
        undo.append(functools.partial(setattr, mod, attr, fn))
    try:
        yield
    finally:
        for u in undo:
            u()


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def child(name: str, n: int, repeats: int, stages: bool, cprofile: str | None) -> None:
    """One tree's rounds (run as a child process with the tree first on ``sys.path``); one JSON
    line per round on stdout. Between rounds it waits for a line on stdin (interleaving)."""
    from bench_filing_schedule import FACILITATOR, row, seed
    from sqlalchemy import text

    from filing.schedules import service
    from servicekit.auth import Principal
    from servicekit.db import make_engine, make_sessionmaker
    from servicekit.testing import fresh_database
    from taxcore.parameters import default_tree
    from taxcore.periods import Period

    migrations = Path.cwd() / "services" / "filing" / "migrations"  # the tree's own (cwd)
    url = await fresh_database(f"roomtax_profile_schedule_{name}", migrations)
    accounts = await seed(url.replace("postgresql+asyncpg://", "postgresql://"), n)
    engine = make_engine(url, application_name="profile")
    sessions = make_sessionmaker(engine, service="filing")
    tree = default_tree()
    principal = Principal(client_id="bench", role="facilitator", facilitator_id=FACILITATOR)
    gc.collect()
    gc.freeze()
    from servicekit import cli  # the API process's collector thresholds, as it sets them

    gc.set_threshold(*cli.API_GC_THRESHOLDS)
    print(json.dumps({"ready": name}), flush=True)
    for k in range(repeats):
        sys.stdin.readline()
        period = Period.parse(f"{2020 + (k + 1) // 12:04d}-{(k + 1) % 12 + 1:02d}")
        rows: list[Any] = [row(i, a) for i, a in enumerate(accounts)]
        times: dict[str, float] = defaultdict(float)
        calls: dict[str, int] = defaultdict(int)
        async with sessions() as session:
            pg_pid = (await session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            gc.collect()
            pg0, cpu0, t0 = backend_cpu(pg_pid), time.process_time(), time.perf_counter()
            profiler = cProfile.Profile() if cprofile else None
            if profiler is not None:  # the event loop's thread only (not a worker thread's)
                profiler.enable()
            with staged(times, calls) if stages else contextlib.nullcontext():
                accepted = await service.accept_schedule(
                    session,
                    principal=principal,
                    facilitator_id=FACILITATOR,
                    period=period,
                    received_on=date(2026, 12, 1),
                    rows=rows,
                    source_format="json",
                    today=date(2026, 12, 1),
                    parameters=tree,
                )
                await session.commit()  # the deferred checks run here: part of the cost
            wall, cpu, pg = time.perf_counter() - t0, time.process_time() - cpu0, backend_cpu(pg_pid) - pg0
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(f"{cprofile}.{name}.{k + 1}")
        assert accepted.schedule.accepted == n, accepted.schedule.accepted
        print(
            json.dumps({"cpu": cpu, "pg": pg, "wall": wall, "stages": dict(times), "calls": dict(calls)}),
            flush=True,
        )
    await engine.dispose()


def start_child(name: str, src: Path, args: argparse.Namespace) -> subprocess.Popen[str]:
    path = [str(src / d) for d in ("libs/servicekit", "libs/taxcore", "services/filing")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(ROOT / "bench")]))
    cmd = [
        sys.executable,
        "-u",
        __file__,
        "--child",
        name,
        "--rows",
        str(args.rows),
        "--repeats",
        str(args.repeats),
    ]
    if not args.stages:
        cmd.append("--no-stages")
    if args.cprofile:
        cmd += ["--cprofile", os.path.abspath(args.cprofile)]
    return subprocess.Popen(cmd, env=env, cwd=src, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"child exited: {proc.wait()}")
    return json.loads(line)  # type: ignore[no-any-return]


def main(args: argparse.Namespace) -> None:
    trees = [(args.name, ROOT)] + [
        (name, Path(os.path.abspath(d))) for name, d in (t.split("=", 1) for t in args.tree)
    ]
    procs = {name: start_child(name, src, args) for name, src in trees}
    for proc in procs.values():
        _line(proc)
    n = args.rows
    print(
        f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores), {n} rows", flush=True
    )
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in procs}
    for k in range(args.repeats):
        for name, proc in procs.items():
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
            r = _line(proc)
            runs[name].append(r)
            print(
                f"round {k + 1} {name:10}: process CPU {r['cpu']:6.2f} s ({r['cpu'] * 1e6 / n:5.0f} us/row), "
                f"PostgreSQL CPU {r['pg']:5.2f} s, wall {r['wall']:6.2f} s",
                flush=True,
            )
    for proc in procs.values():
        proc.wait()
    print(f"load after: {os.getloadavg()[0]:.1f}")
    print()
    base = trees[-1][0]
    base_cpu = statistics.median(r["cpu"] for r in runs[base])
    print("| tree | process CPU us/row | ratio to " + base + " | PostgreSQL CPU us/row | wall s |")
    print("|---|---|---|---|---|")
    for name, _ in trees:
        cpu = statistics.median(r["cpu"] for r in runs[name])
        pg = statistics.median(r["pg"] for r in runs[name])
        wall = statistics.median(r["wall"] for r in runs[name])
        print(f"| {name} | {cpu * 1e6 / n:.0f} | {cpu / base_cpu:.2f} | {pg * 1e6 / n:.0f} | {wall:.2f} |")
    if args.stages:
        print()
        print("stages (thread CPU us per row, median of rounds; nested stages are inside their parent):")
        names = sorted({s for rs in runs.values() for r in rs for s in r["stages"]}, key=_stage_order)
        print("| stage | " + " | ".join(name for name, _ in trees) + " |")
        print("|---|" + "---|" * len(trees))
        for s in names:
            cells = []
            for name, _ in trees:
                vals = [r["stages"].get(s) for r in runs[name]]
                cells.append("-" if None in vals else f"{statistics.median(vals) * 1e6 / n:.1f}")
            print(f"| {s} | " + " | ".join(cells) + " |")


def _stage_order(s: str) -> int:
    order = [f"{m.rsplit('.', 1)[-1]}.{a}" for m, a in STAGES]
    return order.index(s) if s in order else len(order)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="NAME=DIR: another source tree")
    parser.add_argument("--name", default="after", help="this checkout's name (and its database's)")
    parser.add_argument("--no-stages", dest="stages", action="store_false", help="no stage timers")
    parser.add_argument(
        "--cprofile", metavar="FILE", help="cProfile each round to FILE.<tree>.<round> (the loop's thread)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.child:
        asyncio.run(child(ns.child, ns.rows, ns.repeats, ns.stages, ns.cprofile))
    else:
        main(ns)
