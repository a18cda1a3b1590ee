"""A broker restart in place (Tansu, in memory: it comes back empty) under the running platform.

The ops engineer's report: after the supervisor restarted a killed broker, a NEW payment's
collection never reached distribution. Here, on one platform: a first flow settles; the broker
is restarted (while traffic flows, while nothing flows, and with assessment's worker -- the
producer of ``assessment.collections`` -- restarted too); each time a NEW flow must settle in
distribution within a bounded time, every earlier one must stay settled (no doubles), and no
event may be parked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import CommitFailedError
from platform_harness import Platform, eventually
from test_platform_resilience import (
    Cast,
    assert_clean_logs,
    burst,
    expected_outcome,
    outcome,
    settled,
)
from test_platform_resilience import cast as cast  # noqa: PLC0414 - the module's cast fixture

BOUND = 90.0  # seconds for a new flow to settle after the broker came back


@pytest.fixture(scope="module")
async def platform() -> AsyncIterator[Platform]:
    p = Platform(prefix="roomtax_e2e_broker_restart")
    try:
        await p.start()
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
async def first(platform: Platform, cast: Cast) -> dict[str, str]:
    acct = await burst(platform, cast)
    await eventually(lambda: settled(cast.admin, acct), timeout=120)
    return acct


async def still_settled(cast: Cast, runs: list[dict[str, str]]) -> None:
    for acct in runs:
        assert await outcome(cast.admin, acct) == expected_outcome()


async def test_a_new_flow_after_a_broker_restart_reaches_distribution(
    platform: Platform, cast: Cast, first: dict[str, str]
) -> None:
    platform.broker.restart()
    acct = await burst(platform, cast)
    await eventually(lambda: settled(cast.admin, acct), timeout=BOUND)
    await still_settled(cast, [first, acct])
    assert_clean_logs(platform)


async def test_a_new_flow_after_an_idle_broker_restart_reaches_distribution(
    platform: Platform, cast: Cast, first: dict[str, str]
) -> None:
    platform.broker.restart()
    await asyncio.sleep(15)  # nothing flows: relays check the broker, consumers poll
    acct = await burst(platform, cast)
    await eventually(lambda: settled(cast.admin, acct), timeout=BOUND)
    await still_settled(cast, [first, acct])
    assert_clean_logs(platform)


async def test_a_group_committed_past_the_new_end_still_gets_the_new_collections(
    platform: Platform, cast: Cast, first: dict[str, str]
) -> None:
    """The ops report: distribution's group, restarted too, waited at an offset past the end of
    the new log. Tansu accepts the commit a member sends for a batch it handled across the
    restart, and never answers OFFSET_OUT_OF_RANGE; the old log was longer than assessment's
    window (an earlier replay doubled it), so the replay does not reach that offset."""
    distribution = platform.services["distribution"]
    # killed before the broker restarts: the restarted (empty) broker then has no member in the
    # group, and the commit below (from outside the group) is taken at once. A member that dies
    # while rejoining holds the group for its rebalance timeout: 3 s, its session's (aiokafka's
    # default, pinned by EventConsumer), not 300 s; on Tansu 0.6.0 a survivor takes over in 5 s.
    distribution.kill()
    platform.broker.restart()
    tps = [TopicPartition("assessment.collections", p) for p in range(4)]
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        stale = AIOKafkaConsumer(
            bootstrap_servers=platform.broker.bootstrap, group_id="distribution-collections"
        )
        await stale.start()
        try:
            stale.assign(tps)
            await stale.commit(dict.fromkeys(tps, 500))
            break
        except CommitFailedError:  # a member still holds the group: wait for its session
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(1)
        finally:
            await stale.stop()
    distribution.start()
    await distribution.wait_ready()
    acct = await burst(platform, cast)
    await eventually(lambda: settled(cast.admin, acct), timeout=BOUND)
    await still_settled(cast, [first, acct])
    assert_clean_logs(platform)


async def test_a_new_flow_after_a_broker_and_producer_restart_reaches_distribution(
    platform: Platform, cast: Cast, first: dict[str, str]
) -> None:
    platform.broker.restart()
    await platform.restart("assessment")  # the producer of assessment.collections
    acct = await burst(platform, cast)
    await eventually(lambda: settled(cast.admin, acct), timeout=BOUND)
    await still_settled(cast, [first, acct])
    assert_clean_logs(platform)
