"""The worker's heartbeat file, which the liveness probe reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

from servicekit import cli


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
