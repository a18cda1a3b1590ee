"""Instructions of the consumer's process per event, the real handler against the no-op, under callgrind.

    ROOMTAX_TEST_DB_SUFFIX=_me valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.%p .venv/bin/python bench/bench_distribution_callgrind.py [--events 1000]
    grep -h -E "^(desc: Trigger|totals)" /tmp/cg.*.*

Deterministic where the CPU clock is not (2 cores shared by many): the instructions this process
runs in ``EventConsumer.handle_records`` (a poll's worth at a time, the service's batch size), with
callgrind's instrumentation switched on (``callgrind_control -i on``) only around each measured
mode, one dump per mode ("real", then "noop"): ``totals`` / ``--events`` is the instructions per
event. The database's backends are not counted (see bench_distribution.py for their CPU). The
real handler runs on the consumer the service builds (``distribution.consumers.collections_consumer``
where the tree has it, as bench_distribution.py does); a warm-up batch per mode runs first. Outside
valgrind ``callgrind_control`` finds nothing and the script fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
from pathlib import Path

from bench_distribution import POLL, event, nothing, records, service_consumer

from distribution.app import build_app
from distribution.consumers import BATCH_SIZE
from distribution.ledger.handlers import COLLECTION_POSTED, on_collection_posted
from distribution.settings import DistributionSettings
from servicekit import cli
from servicekit.consumer import AnyHandler, EventConsumer
from servicekit.testing import fresh_database, running_app
from taxcore.parameters import default_tree

ROOT = Path(__file__).resolve().parent.parent


def callgrind(*args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True, capture_output=True)


async def main(events: int) -> None:
    url = await fresh_database(
        "roomtax_bench_distribution_callgrind", ROOT / "services/distribution/migrations"
    )
    app = build_app(DistributionSettings(environment="test", database_url=url))
    async with running_app(app):
        sm = app.state.sessionmaker
        default_tree()
        cli.settle_heap()
        modes: list[tuple[str, AnyHandler]] = [("real", on_collection_posted), ("noop", nothing)]

        def consumer(name: str, handler: AnyHandler) -> EventConsumer:
            if handler is on_collection_posted and service_consumer is not None:
                real: EventConsumer = service_consumer(sm, bootstrap="unused:0", runtime=None, max_attempts=1)
                real.name = name
                return real
            return EventConsumer(
                name=name, bootstrap="unused:0", topics=[], sessionmaker=sm,
                handlers={COLLECTION_POSTED: handler}, batch_size=BATCH_SIZE, max_attempts=1,
            )  # fmt: skip

        k = 10_000_000
        for name, handler in modes:  # plans, caches
            await consumer(f"warm-{name}", handler).handle_records(
                records([event(k + i) for i in range(BATCH_SIZE)])
            )
            k += BATCH_SIZE
        k = 0
        for name, handler in modes:
            recs = records([event(k + i) for i in range(events)])
            k += events
            c = consumer(name, handler)
            callgrind("-z")
            callgrind("-i", "on")
            for start in range(0, len(recs), POLL):
                await c.handle_records(recs[start : start + POLL])
            callgrind("-i", "off")
            callgrind("-d", name)
            assert (c.applied, c.parked) == (events, 0), (c.applied, c.parked)
    print(f"{events} events per mode: see the dumps' totals")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1000)
    asyncio.run(main(parser.parse_args().events))
