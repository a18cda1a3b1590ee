"""In-process CPU of a consumer batch's recomputation of long accounts, tree against tree.

    ROOMTAX_TEST_DB_SUFFIX=_me uv run python -u bench/profile_wide.py [--rounds 6] [--repeats 3]
        [--tree NAME=DIR ...] [--profile FILE]

Reuses ``bench_consumer_batches.py --wide-accounts 100 --wide-periods 150``'s template database
(run that first). For each source tree (``after``: this checkout; ``--tree NAME=DIR`` another,
e.g. ``git archive main | tar -x -C DIR``) a child process, with the tree's packages first on
``PYTHONPATH``, copies the template, freezes the heap as the worker does and calls
``accounts.service.recompute_accounts`` of every account ``--rounds`` times, each in a
transaction rolled back (nothing changes between rounds: every period's stored figures are
reused, as the steady worker reuses all but the period an event changed). Per round: the
process's CPU (``time.process_time``), of it the collector's (``gc.callbacks``), and the
PostgreSQL backend's (``/proc``) per account. The first round fills the process's memos
(digests, balances) and commits (the template's own batches may have left rows to rewrite,
which a worker rewrites once); the others are the steady state. ``--gc-threshold a,b,c``:
``gc.set_threshold`` in the children.
Trees interleaved, ``--repeats`` rounds of children, medians. ``--profile FILE``: cProfile of the
steady rounds of the first tree's last child, written to FILE (``python -m pstats FILE``).

Quieter than the consumer bench's CPU per event on a shared machine: no events to parse, no
no-op baseline, the same work every round, and a round is ~1-3 s of CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_consumer_batches import TREE_PACKAGES, WIDE_TEMPLATE, _admin, tree_migrations, wide_account
from bench_distribution import backend_cpu
from sqlalchemy import text

from assessment.accounts import service
from assessment.accounts.ledger import BalanceCache
from assessment.accounts.repository import attach
from servicekit import cli
from servicekit.db import make_engine, make_sessionmaker
from servicekit.migrations import upgrade
from servicekit.runtime import Runtime
from servicekit.testing import database_url, test_database_name

RUN = "roomtax_profile_wide_run"


class _GcTime:
    """The CPU seconds the collector took (``gc.callbacks``), and its collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._start = 0.0
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.seconds += time.process_time() - self._start
            self.collections += 1


async def child(
    template: str, accounts: int, rounds: int, profile: str | None, thresholds: tuple[int, ...] | None
) -> None:
    run = test_database_name(RUN)
    await _admin(
        f'DROP DATABASE IF EXISTS "{run}" WITH (FORCE)', f'CREATE DATABASE "{run}" TEMPLATE "{template}"'
    )
    await asyncio.to_thread(upgrade, tree_migrations(), database_url(run))
    engine = make_engine(database_url(run), application_name="profile-wide", pool_size=1)
    sm = make_sessionmaker(engine, service="assessment")
    runtime = Runtime.from_environment()
    attach(sm, BalanceCache(law=runtime.law), runtime)
    names = [wide_account(j) for j in range(accounts)]
    settle = getattr(cli, "settle_heap", None)
    if settle is not None:
        settle()
    if thresholds:
        gc.set_threshold(*thresholds)
    collector = _GcTime()
    out: list[tuple[float, float, float]] = []
    profiler = cProfile.Profile() if profile else None
    try:
        for n in range(rounds):
            async with sm() as s:
                tx = await s.begin()
                own = (await s.execute(text("SELECT pg_backend_pid()"))).scalar_one()
                cpu, db, collected = time.process_time(), backend_cpu([own]), collector.seconds
                if profiler is not None and n > 0:
                    profiler.enable()
                await service.recompute_accounts(s, tax_accounts=names)
                if profiler is not None:
                    profiler.disable()
                out.append(
                    (
                        (time.process_time() - cpu) / accounts * 1e6,
                        (backend_cpu([own]) - db) / accounts * 1e6,
                        (collector.seconds - collected) / accounts * 1e6,
                    )
                )
                if n == 0:  # the first round's rows are kept: the template's batches may have left
                    await tx.commit()  # some to rewrite, which the worker does once
                else:
                    await tx.rollback()
    finally:
        await engine.dispose()
    if profiler is not None and profile:
        profiler.dump_stats(profile)
    print("RESULT " + json.dumps({"rounds": out, "load": os.getloadavg()[0]}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--periods", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="NAME=DIR of another tree")
    parser.add_argument("--profile", help="cProfile of the first tree's steady rounds, to this file")
    parser.add_argument("--gc-threshold", help="gc.set_threshold in the children (a,b,c)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        thresholds = tuple(int(x) for x in args.gc_threshold.split(",")) if args.gc_threshold else None
        asyncio.run(child(args.child, args.accounts, args.rounds, args.profile, thresholds))
        return
    template = test_database_name(f"{WIDE_TEMPLATE}_{args.accounts}x{args.periods}")
    trees = [("after", Path(__file__).resolve().parent.parent)]
    trees += [(n, Path(d).resolve()) for n, d in (t.split("=", 1) for t in args.tree)]
    seen: dict[str, list[list[float]]] = {}
    for r in range(1, args.repeats + 1):
        for i, (name, tree) in enumerate(trees):
            env = dict(os.environ, PYTHONPATH=":".join(str(tree / p) for p in TREE_PACKAGES))
            command = [sys.executable, "-u", str(Path(__file__).resolve()), "--child", template]
            command += ["--accounts", str(args.accounts), "--rounds", str(args.rounds)]
            command += ["--gc-threshold", args.gc_threshold] if args.gc_threshold else []
            if args.profile and i == 0 and r == args.repeats:
                command += ["--profile", args.profile]
            print(f"=== round {r}, {name} ({tree}) load {os.getloadavg()[0]:.1f}", flush=True)
            done = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            line = next(x for x in done.splitlines() if x.startswith("RESULT "))
            f = json.loads(line.removeprefix("RESULT "))
            rounds = f["rounds"]
            steady = statistics.median(r[0] for r in rounds[1:])
            steady_db = statistics.median(r[1] for r in rounds[1:])
            steady_gc = statistics.median(r[2] for r in rounds[1:])
            seen.setdefault(name, []).append([rounds[0][0], steady, steady_db, steady_gc])
            print(
                f"    first round {rounds[0][0]:.0f} us/account (PostgreSQL {rounds[0][1]:.0f}); steady "
                f"{steady:.0f} (PostgreSQL {steady_db:.0f}, of the process's the collector {steady_gc:.0f}); "
                "rounds " + " ".join(f"{r[0]:.0f}" for r in rounds) + f"; load {f['load']:.1f}",
                flush=True,
            )
    print(
        f"\nrecompute_accounts of {args.accounts} accounts x {args.periods} periods, "
        f"medians of {args.repeats}"
    )
    print(
        "| tree | first round us/account | steady us/account | steady PostgreSQL us/account "
        "| steady collector us/account |"
    )
    print("|---|---|---|---|---|")
    med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in seen.items()}
    for name, _ in trees:
        m = med[name]
        print(f"| {name} | {m[0]:.0f} | {m[1]:.0f} | {m[2]:.0f} | {m[3]:.0f} |")
    for name, _ in trees[1:]:
        print(
            f"{name}/after CPU: first x{med[name][0] / med['after'][0]:.2f}, "
            f"steady x{med[name][1] / med['after'][1]:.2f}"
        )


if __name__ == "__main__":
    main()
