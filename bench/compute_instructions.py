"""Instructions per row of a schedule chunk's computation (``filing.schedules.service._compute``),
counted by callgrind: a figure the machine's load does not move.

    uv run python -u bench/compute_instructions.py [--rows 300] [--tree NAME=DIR ...]

For each source tree (``after``: this checkout; ``--tree NAME=DIR`` another, e.g.
``git archive main | tar -x -C DIR``) a child process runs under ``valgrind --tool=callgrind``
with that tree's ``libs/servicekit``, ``libs/taxcore`` and ``services/filing`` first on
``PYTHONPATH``. It builds ``--rows`` candidates as a chunk's lookups leave them (the rows of
``bench_filing_schedule.py``, PR hotels as ``filing_seed.py`` seeds them, every other row an
amendment), computes them once (warm-up: the law's memos, first calls), then once more inside
``operator.call``: callgrind collects only while that C function runs (``--toggle-collect``),
so imports, set-up and the warm-up are not counted. No database: the chunk's lookups, COPY and
outbox writes are not in the figure (``profile_schedule.py`` measures those).

About a minute per tree at 300 rows (callgrind runs Python ~50x slower).
"""

from __future__ import annotations

import argparse
import gc
import operator
import os
import re
import subprocess
import sys
import tempfile
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def child(n: int) -> None:
    from bench_filing_schedule import FACILITATOR, row

    import filing.models as models
    from filing.declarations.repository import loaded
    from filing.declarations.schemas import Filer
    from filing.lodging_periods import filing_id
    from filing.schedules import service
    from filing.schedules.schemas import ScheduleRow
    from taxcore.parameters import default_tree
    from taxcore.periods import Period

    period = Period.parse("2026-10")
    lodgings: list[Any] = []
    for i in range(n):
        values = {
            "lodging_id": f"lodging-{i}",
            "tax_account": f"PR-{i + 1:07d}-0",
            "jurisdiction": "PR",
            "lodging_class": "hotel",
            "casino": False,
            "name": f"Hotel {i}",
            "municipality": "San Juan",
            "operator_id": "op-bench",
            "registered_on": date(2020, 1, 1),
            "statuses": [{"status": "active", "effective_from": "2020-01-01"}],
            "attributes": [{"effective_from": "2020-01-01", "lodging_class": "hotel", "casino": False}],
            "as_of": datetime(2026, 12, 1, tzinfo=UTC),
        }
        row_type = getattr(models, "LodgingRow", None)  # as the tree's lookup builds a lodging
        lodgings.append(loaded(models.Lodging, values) if row_type is None else row_type(**values))
    candidates = [
        (i, ScheduleRow.model_validate(row(i, lodging.tax_account)), lodging)
        for i, lodging in enumerate(lodgings)
    ]
    filing_ids = {
        lodging.lodging_id: filing_id(lodging.lodging_id, period, "facilitator", FACILITATOR)
        for lodging in lodgings
    }
    previous = {filing_ids[lodging.lodging_id]: ("0" * 36, 1) for lodging in lodgings[::2]}
    tree = default_tree()

    def compute() -> Any:
        return service._compute(
            candidates,
            filer=Filer(kind="facilitator", id=FACILITATOR),
            period=period,
            certificates={},
            previous=previous,
            filing_ids=filing_ids,
            received_on=date(2026, 12, 1),
            today=date(2026, 12, 1),
            tree=tree,
            schedule_id="0" * 36,
            submitted_by="bench",
            results={},
            service="filing",
            traceparent=None,
        )

    records, _ = compute()
    assert len(records) == n
    gc.collect()
    gc.freeze()  # as the API process does after start-up
    operator.call(compute)


def measure(name: str, src: Path, n: int) -> int:
    path = [str(src / d) for d in ("libs/servicekit", "libs/taxcore", "services/filing")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(ROOT / "bench")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=_operator_call",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            "--rows",
            str(n),
        ]
        done = subprocess.run(cmd, env=env, cwd=src, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{name}: {done.stderr[-2000:]}")
        found = re.search(r"Collected : (\d+)", done.stderr)
        if found is None:
            raise RuntimeError(f"{name}: no count in callgrind's output")
        return int(found.group(1))


def main(args: argparse.Namespace) -> None:
    trees = [(args.name, ROOT)] + [
        (name, Path(os.path.abspath(d))) for name, d in (t.split("=", 1) for t in args.tree)
    ]
    counts = {}
    for name, src in trees:
        counts[name] = measure(name, src, args.rows)
        print(
            f"{name:10}: {counts[name]:,} instructions, {counts[name] / args.rows:,.0f} per row", flush=True
        )
    base = trees[-1][0]
    print()
    print(f"| tree | instructions per row | ratio to {base} |")
    print("|---|---|---|")
    for name, _ in trees:
        print(f"| {name} | {counts[name] / args.rows:,.0f} | {counts[name] / counts[base]:.3f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--tree", action="append", default=[], help="NAME=DIR: another source tree")
    parser.add_argument("--name", default="after", help="this checkout's name")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.child:
        child(ns.rows)
    else:
        main(ns)
