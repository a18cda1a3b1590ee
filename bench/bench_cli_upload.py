"""Benchmark: ``roomtax schedule upload`` of a 50,000-row CSV against one direct API request.

    uv run python bench/bench_cli_upload.py [rows] [chunk_rows]

Builds a fresh filing database (``roomtax_bench_cli``), seeds one lodging per row, all
authorizing one facilitator, and serves the filing API (uvicorn, loopback). In the same run:

* baseline: the same rows as one CSV body in one ``POST /v1/remittance-schedules``
  (period 2026-10), timed from the request to the parsed response;
* the CLI: ``python -m roomtax_cli schedule upload FILE --period 2026-09 --json`` as a
  process (start-up, parsing, chunking, one request per chunk, the summary), timed end to end.

Both file every row for the first time (different periods). Reports rows/s of each and
the ratio CLI / direct.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_filing_schedule import row, seed

from filing.app import build_app
from filing.settings import FilingSettings
from servicekit.testing import ServedApp, fresh_database, token

MIGRATIONS = Path(__file__).resolve().parent.parent / "services" / "filing" / "migrations"


def main(n: int, chunk_rows: int) -> None:
    url = asyncio.run(fresh_database("roomtax_bench_cli", MIGRATIONS))
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    facilitator = "fac-bench"
    accounts = asyncio.run(seed(dsn, n, facilitator, "op-bench"))
    rows = [row(i, a) for i, a in enumerate(accounts)]
    header = list(rows[0])
    work = Path(tempfile.mkdtemp(prefix="roomtax-bench-cli-"))
    schedule = work / "schedule.csv"
    with schedule.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([[r[h] for h in header] for r in rows])
    access = token("facilitator", facilitator_id=facilitator)
    app = build_app(
        FilingSettings(
            environment="test", database_url=url, kafka_bootstrap="127.0.0.1:9", log_level="WARNING"
        )
    )
    with ServedApp(app) as served:
        config = work / "config.json"
        urls = {"registry": "", "filing": served.url, "assessment": "", "notify": ""}
        config.write_text(json.dumps({"client_id": "bench", "access_token": access, "urls": urls}))

        t0 = time.perf_counter()
        direct = httpx.post(
            f"{served.url}/v1/remittance-schedules",
            params={"period": "2026-10"},
            content=schedule.read_bytes(),
            headers={"Authorization": f"Bearer {access}", "Content-Type": "text/csv"},
            timeout=600,
        )
        direct_seconds = time.perf_counter() - t0
        assert direct.status_code == 201, direct.text[:500]
        assert direct.json()["accepted"] == n

        t0 = time.perf_counter()
        cli = subprocess.run(
            [sys.executable, "-m", "roomtax_cli", "schedule", "upload", str(schedule), "--period", "2026-09"]
            + ["--chunk-rows", str(chunk_rows), "--json"],
            env={**os.environ, "ROOMTAX_CONFIG": str(config)},
            capture_output=True,
            text=True,
            timeout=1200,
        )
        cli_seconds = time.perf_counter() - t0
        assert cli.returncode == 0, cli.stdout[-2000:] + cli.stderr[-2000:]
        summary = json.loads(cli.stdout)
        assert (summary["rows"], summary["accepted"], summary["rejected"]) == (n, n, 0)

    print(f"rows: {n}, CLI chunks: {summary['chunks']} of {chunk_rows} rows, load {os.getloadavg()[0]:.1f}")
    print(f"direct (one CSV request):  {direct_seconds:8.2f} s  {n / direct_seconds:9.0f} rows/s  (baseline)")
    print(f"roomtax schedule upload:   {cli_seconds:8.2f} s  {n / cli_seconds:9.0f} rows/s")
    print(f"ratio CLI / direct, rows/s: {direct_seconds / cli_seconds:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5_000)
