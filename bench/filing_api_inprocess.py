"""``POST /v1/declarations`` in-process: the filing ASGI app driven without a server.

    uv run python bench/filing_api_inprocess.py [--posts 3000] [--conns 8] [--rounds 3]
    PYTHONPATH=DIR/libs/servicekit:DIR/libs/taxcore:DIR/services/filing uv run python ...  # another tree

The app of ``python -m filing api`` (its lifespan, ``gc.freeze()`` and collector thresholds)
on a fresh database seeded as ``bench_filing_api.py`` seeds it; ``--conns`` workers send the
requests of ``declarations.lua``'s mode ``new`` straight into the ASGI app (no HTTP, no
uvicorn), and each round prints the process's user and system CPU per request.

``--callgrind``: run under ``valgrind --tool=callgrind --instr-atstart=no``; the instructions
are counted for the ``--posts`` requests after the warm-up only (``callgrind_control -i``),
which on this shared machine is the figure the load does not move (session 11; valgrind
runs the interpreter itself, not ``uv``, which would start it as a child valgrind does not follow):

    valgrind --tool=callgrind --instr-atstart=no \
        .venv/bin/python bench/filing_api_inprocess.py --callgrind --posts 400

(set ``FILING_DB_POOL_TIMEOUT=900`` for ``--conns`` above the pool: under valgrind a wait for
a connection can pass the 30 s of a 503).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_filing_api as b  # noqa: E402

from servicekit.testing import fresh_database, token  # noqa: E402

#: ``declarations.lua``'s body, the same format string
BODY = (
    '{"lodging":"PR-%07d-0","period":"%s","room_revenue":"%d.00","paid_unused_rooms":"40.00",'
    '"room_penalties":"15.00","resort_and_other_fees":"25.00","surcharges_and_service_charges":"12.50",'
    '"intermediary_retained":"150.00","all_inclusive_global_charges":"0.00","room_nights":5,'
    '"timeshare_owner_unit_days":0,"tax_itemized":true,"declared":{"tax":"%d.00"}}'
)


def body(slot: int, lodgings: int) -> bytes:
    """The body of ``declarations.lua``'s request ``slot`` (mode ``new``)."""
    n = slot // lodgings
    revenue = 1000 + slot % 997
    period = f"{2015 + n // 12:04d}-{n % 12 + 1:02d}"
    return (BODY % (slot % lodgings + 1, period, revenue, revenue * 9 // 100)).encode()


async def main(args: argparse.Namespace) -> None:
    url = await fresh_database(args.db, b.MIGRATIONS)
    await b.seed(url.replace("postgresql+asyncpg://", "postgresql://"), args.lodgings)
    os.environ.update(FILING_DATABASE_URL=url, ROOMTAX_LOG_LEVEL="WARNING")
    from filing.app import build_app
    from servicekit.cli import API_GC_THRESHOLDS

    app = build_app()
    bearer = token("operator", operator_id=b.OPERATOR, client_id=f"bench-{uuid.uuid4().hex[:8]}").encode()
    statuses: dict[int, int] = {}

    async def post(slot: int) -> None:
        raw = body(slot, args.lodgings)
        headers = [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"authorization", b"Bearer " + bearer),
            (b"content-length", str(len(raw)).encode()),
        ]
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/declarations",
            "raw_path": b"/v1/declarations",
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 1234),
            "server": ("127.0.0.1", 80),
            "state": {},
        }
        messages = [{"type": "http.request", "body": raw, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await asyncio.sleep(3600)  # no disconnect while the response is sent
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses[message["status"]] = statuses.get(message["status"], 0) + 1

        await app(scope, receive, send)

    next_slot = 0

    async def batch(n: int) -> None:
        nonlocal next_slot
        slots = iter(range(next_slot, next_slot + n))
        next_slot += n

        async def worker() -> None:
            for slot in slots:
                await post(slot)

        await asyncio.gather(*(worker() for _ in range(args.conns)))

    async with app.router.lifespan_context(app):
        gc.collect()
        gc.freeze()
        gc.set_threshold(*API_GC_THRESHOLDS)
        await batch(args.warm)
        if args.callgrind:
            await asyncio.to_thread(
                subprocess.run, ["callgrind_control", "-i", "on", str(os.getpid())], check=True
            )
            await batch(args.posts)
            await asyncio.to_thread(
                subprocess.run, ["callgrind_control", "-i", "off", str(os.getpid())], check=True
            )
            print(f"{args.posts} POSTs counted, responses {statuses}", flush=True)
            return
        for r in range(args.rounds):
            before = resource.getrusage(resource.RUSAGE_SELF)
            wall = time.perf_counter()
            await batch(args.posts)
            after = resource.getrusage(resource.RUSAGE_SELF)
            per = 1e6 / args.posts
            print(
                f"round {r + 1}: user {(after.ru_utime - before.ru_utime) * per:.0f} us/req, "
                f"system {(after.ru_stime - before.ru_stime) * per:.0f}, "
                f"wall {(time.perf_counter() - wall) * per:.0f}, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print(f"responses {statuses}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--posts", type=int, default=3000)
    parser.add_argument("--conns", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", type=int, default=700)
    parser.add_argument("--lodgings", type=int, default=2000)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--db", default="roomtax_bench_inprocess", help="another name for two runs at once")
    import uvloop

    uvloop.run(main(parser.parse_args()))
