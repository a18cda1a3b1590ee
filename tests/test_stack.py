"""The local stack's supervisor (scripts/stack.py): a crashed process is restarted, not fatal."""

from __future__ import annotations

import importlib.util
import signal
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from servicekit.testing import free_port

ROOT = Path(__file__).resolve().parent.parent
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def load_stack() -> ModuleType:
    spec = importlib.util.spec_from_file_location("roomtax_stack", ROOT / "scripts" / "stack.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


stack = load_stack()


class Running:
    """A supervisor looping in a thread, as ``./scripts/run`` loops in its main thread."""

    def __init__(self, supervisor: Any) -> None:
        self.supervisor = supervisor
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=supervisor.run, args=(self.stopped.is_set, 0.05), daemon=True)

    def __enter__(self) -> Running:
        self.supervisor.start_all()
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)
        self.supervisor.stop_all(timeout=5)


def wait_until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture
def said() -> list[str]:
    """What the supervisor said (``./scripts/run`` prints it)."""
    return []


class TestSupervisor:
    def test_a_killed_process_is_restarted_and_the_others_keep_running(
        self, tmp_path: Path, said: list[str]
    ) -> None:
        programs = [
            stack.Program(name, SLEEPER, tmp_path / f"{name}.log") for name in ("api", "worker", "other")
        ]
        supervisor = stack.Supervisor(programs, initial=0.2, say=said.append)
        with Running(supervisor):
            api, worker, other = programs
            pids = {p.name: p.proc.pid for p in programs}
            worker.proc.send_signal(signal.SIGKILL)
            wait_until(lambda: worker.restarts == 1 and worker.proc.poll() is None)
            assert worker.proc.pid != pids["worker"]
            assert (api.proc.pid, other.proc.pid) == (pids["api"], pids["other"])
            assert [api.proc.poll(), other.proc.poll()] == [None, None]
            assert said[0].startswith("worker exited (code -9) after ")
            assert said[0].endswith(f"s; restarting in 0.2s (see {worker.log})")
            assert said[1] == f"worker restarted (pid {worker.proc.pid}, restart 1)"
        assert all(p.proc.poll() is not None for p in programs)  # stop_all: only on request

    def test_a_crash_loop_backs_off_doubling_up_to_the_maximum(self, tmp_path: Path, said: list[str]) -> None:
        crasher = stack.Program("crasher", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "c.log")
        supervisor = stack.Supervisor([crasher], initial=0.1, maximum=0.4, stable_after=30, say=said.append)
        with Running(supervisor):
            wait_until(lambda: crasher.restarts >= 4)
        delays = [line.split("restarting in ")[1].split("s")[0] for line in said if "exited" in line]
        assert delays[:4] == ["0.1", "0.2", "0.4", "0.4"]
        assert all("exited (code 3)" in line for line in said if "exited" in line)

    def test_a_stable_run_resets_the_backoff(self, tmp_path: Path) -> None:
        p = stack.Program("p", SLEEPER, tmp_path / "p.log")
        supervisor = stack.Supervisor([p], initial=1.0, stable_after=0.0, say=lambda _: None)
        p.failures = 4
        supervisor.start(p)
        p.proc.kill()
        p.proc.wait()
        supervisor.poll()
        assert (p.failures, p.restart_at is not None) == (1, True)
        assert supervisor.backoff(p) == 1.0
        supervisor.stop_all()

    def test_the_broker_is_watched_and_restarted_on_its_port(self, tmp_path: Path, said: list[str]) -> None:
        port = free_port()
        broker = stack.Program(
            "broker",
            stack.broker_argv(port),
            tmp_path / "broker.log",
            up=lambda: stack.listening(port),
        )
        supervisor = stack.Supervisor([broker], initial=0.2, say=said.append)
        with Running(supervisor):
            assert stack.listening(port)
            broker.proc.send_signal(signal.SIGKILL)
            wait_until(lambda: broker.restarts == 1 and stack.listening(port), timeout=20)
            assert said[0].startswith("broker exited (code -9)")
            assert said[1].startswith("broker restarted (pid ")

    def test_a_program_that_never_comes_up_is_killed_and_restarted(
        self, tmp_path: Path, said: list[str]
    ) -> None:
        hung = stack.Program("hung", SLEEPER, tmp_path / "h.log", up=lambda: False, up_timeout=0.2)
        supervisor = stack.Supervisor([hung], initial=0.1, say=said.append)
        with Running(supervisor):
            wait_until(lambda: hung.restarts >= 1)
        assert said[0] == f"hung did not come up; see {hung.log}"
        assert said[1].startswith("hung exited (code -9)")


class TestBanner:
    """The banner prints the demo's curl lines only when this run's demo wrote them."""

    def lines(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, since: float) -> str:
        monkeypatch.setattr(stack, "RUN", tmp_path)
        stack.print_banner(["registry"], since=since)
        out: str = capsys.readouterr().out
        return out

    def test_lines_left_by_an_earlier_run_are_not_printed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
    ) -> None:
        import os

        stale = tmp_path / "demo-curl.txt"
        stale.write_text("  curl -s STALE-DEMO-LINE\n")
        os.utime(stale, (1_000_000.0, 1_000_000.0))  # written long before this run began
        out = self.lines(tmp_path, monkeypatch, capsys, since=2_000_000.0)
        assert "STALE-DEMO-LINE" not in out
        assert '"http://127.0.0.1:8001/v1/lodgings?limit=5"' in out  # the generic lines instead

    def test_lines_this_runs_demo_wrote_are_printed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
    ) -> None:
        import os

        fresh = tmp_path / "demo-curl.txt"
        fresh.write_text("  curl -s THIS-RUNS-DEMO-LINE\n")
        os.utime(fresh, (2_000_001.0, 2_000_001.0))
        out = self.lines(tmp_path, monkeypatch, capsys, since=2_000_000.0)
        assert "  curl -s THIS-RUNS-DEMO-LINE" in out.splitlines()
        assert "v1/lodgings?limit=5" not in out
