"""The worker's heartbeat file, which the liveness probe reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from servicekit import cli
from servicekit.consumer import FETCH_MAX_WAIT_MS, PROMPT_FETCH_MAX_WAIT_MS, EventConsumer
from servicekit.settings import ServiceSettings
from servicekit.testing import BrokerProcess, free_port


async def reported(path: Path, broker: str, timeout: float = 10) -> dict[str, object]:
    """The heartbeat file once it reports ``broker``: the first beat waits for the broker
    probe, which takes longer than a beat's interval on a loaded machine (a fixed 0.5 s read
    a file not yet written in CI)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (health := cli.worker_health(str(path))).get("broker") != broker:
        assert asyncio.get_running_loop().time() < deadline, f"no beat with broker {broker!r}: {health}"
        await asyncio.sleep(0.05)
    return health


class TestHeartbeat:
    async def test_touches_while_alive_and_stops_when_a_task_dies(self, tmp_path: Path) -> None:
        path = tmp_path / "beat"
        stop = asyncio.Event()
        alive = asyncio.create_task(stop.wait())
        beat = asyncio.create_task(cli.heartbeat([alive], stop, str(path)))  # type: ignore[list-item]
        await asyncio.sleep(0.05)
        assert path.exists()
        stop.set()
        await beat
        await alive

        path.unlink()
        dying = asyncio.create_task(asyncio.sleep(0))
        await dying
        stop2 = asyncio.Event()
        await asyncio.wait_for(cli.heartbeat([dying], stop2, str(path)), timeout=5)  # type: ignore[list-item]
        assert not path.exists()  # a dead task: no heartbeat, the probe fails, the pod restarts

    async def test_reports_the_broker_health_and_keeps_beating_when_it_is_down(
        self, tmp_path: Path, broker: BrokerProcess
    ) -> None:
        path = tmp_path / "beat"
        stop = asyncio.Event()
        alive = asyncio.create_task(stop.wait())
        beat = asyncio.create_task(
            cli.heartbeat([alive], stop, str(path), bootstrap=broker.bootstrap, interval=0.1)  # type: ignore[list-item]
        )
        health = await reported(path, "ok")
        assert (health["broker"], health["tasks"], health["fresh"]) == ("ok", 1, True)
        assert REGISTRY.get_sample_value("roomtax_worker_broker_up") == 1
        stop.set()
        await beat
        await alive

        stop2 = asyncio.Event()
        alive = asyncio.create_task(stop2.wait())
        beat = asyncio.create_task(
            cli.heartbeat([alive], stop2, str(path), bootstrap=f"127.0.0.1:{free_port()}", interval=0.1)  # type: ignore[list-item]
        )
        assert (await reported(path, "unavailable"))["broker"] == "unavailable"
        await asyncio.sleep(0.3)  # three more beats' time
        assert not beat.done()  # a broker outage is reported, not a reason to be restarted
        assert REGISTRY.get_sample_value("roomtax_worker_broker_up") == 0
        stop2.set()
        await beat
        await alive

    def test_a_missing_heartbeat_is_not_fresh(self, tmp_path: Path) -> None:
        assert cli.worker_health(str(tmp_path / "none")) == {"fresh": False}


class TestConsumerSettings:
    @staticmethod
    def consumer(**fetch: int) -> EventConsumer:
        """A consumer never started (no broker, no database): only its settings are read."""
        return EventConsumer(name="c", bootstrap="", topics=[], sessionmaker=None, handlers={}, **fetch)  # type: ignore[arg-type]

    def test_each_consumer_keeps_its_own_fetch_wait_unless_the_worker_sets_one(self) -> None:
        background, prompt = self.consumer(), self.consumer(fetch_max_wait_ms=PROMPT_FETCH_MAX_WAIT_MS)
        for c in (background, prompt):
            cli.configure_consumer(c, ServiceSettings())
        assert (background.fetch_max_wait_ms, prompt.fetch_max_wait_ms) == (500, 100)
        assert FETCH_MAX_WAIT_MS == 500  # aiokafka's default: off any latency goal, idle CPU as before

        for c in (background, prompt):
            cli.configure_consumer(c, ServiceSettings(kafka_fetch_max_wait_ms=250))
        assert (background.fetch_max_wait_ms, prompt.fetch_max_wait_ms) == (250, 250)

    def test_the_setting_comes_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ROOMTAX_KAFKA_FETCH_MAX_WAIT_MS", "50")
        assert ServiceSettings().kafka_fetch_max_wait_ms == 50
