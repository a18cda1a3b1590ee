"""Collections flow through the real outbox relay and the real broker into the consumer; the run's
``run.posted`` event flows out the same way."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from distribution_factories import ADMIN, AUDITOR
from sqlalchemy import text

from distribution.app import build_app
from distribution.consumers import consumers
from distribution.ledger.handlers import COLLECTION_POSTED
from distribution.settings import DistributionSettings
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import OutboxRelay, emit, request_replay
from servicekit.runtime import Runtime
from servicekit.testing import BrokerProcess, fresh_database, running_app
from taxcore.events.assessment import CollectionPosted
from taxcore.events.distribution import RUNS

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="module")
async def flow_settings(broker: BrokerProcess) -> DistributionSettings:
    url = await fresh_database("roomtax_test_distribution_flow", MIGRATIONS)
    return DistributionSettings(environment="test", database_url=url, kafka_bootstrap=broker.bootstrap)


async def _wait(predicate: object, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if await predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")


@contextlib.asynccontextmanager
async def _workers(settings: DistributionSettings, topic: str) -> AsyncIterator[list[object]]:
    engine = make_engine(settings.database_url, application_name="flow-test", pool_size=2)
    sessionmaker = make_sessionmaker(engine, service="assessment")  # the scratch outbox plays assessment
    consumer = consumers(
        settings, make_sessionmaker(engine, service="distribution"), Runtime.from_environment()
    )[0]
    consumer.topics = [topic]
    consumer.name = f"distribution-collections-{uuid.uuid4().hex[:8]}"
    relay = OutboxRelay(
        dsn=settings.asyncpg_dsn, bootstrap=settings.kafka_bootstrap, name="flow-relay", check_interval=0.5
    )
    stop = asyncio.Event()
    tasks = [asyncio.create_task(relay.run(stop)), asyncio.create_task(consumer.run(stop))]
    try:
        yield [sessionmaker, consumer, relay]
    finally:
        stop.set()
        for t in tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(t, timeout=15)
        await engine.dispose()


class TestEventFlow:
    async def test_collections_in_run_posted_out(self, flow_settings: DistributionSettings) -> None:
        topic = f"assessment.collections.flow-{uuid.uuid4().hex[:8]}"
        postings = [
            ("tax", "400000.00", date(2026, 10, 4)),
            ("impact_fee", "2000.00", date(2026, 10, 9)),
            ("penalty", "55.10", date(2026, 10, 20)),
        ]
        async with _workers(flow_settings, topic) as (sessionmaker, consumer, _relay):
            async with sessionmaker() as session, session.begin():  # type: ignore[operator]
                for i, (component, amount, on) in enumerate(postings):
                    await emit(
                        session,
                        event_type=COLLECTION_POSTED,
                        key="VI-0001",
                        topic=topic,
                        data=CollectionPosted(
                            posting_id=f"flow-{topic}-{i}",
                            payment_id="pay-1",
                            tax_account="VI-0001",
                            jurisdiction="VI",
                            lodging_class="hotel",
                            period="2026-09",
                            component=component,
                            amount=Decimal(amount),
                            collected_on=on,
                            section="§54(f)",
                        ),
                    )

            async def booked() -> bool:
                async with sessionmaker() as s:  # type: ignore[operator]
                    return (await s.execute(text("SELECT count(*) FROM collections"))).scalar() == 3  # type: ignore[no-any-return]

            await _wait(booked)
            async with sessionmaker() as session, session.begin():  # type: ignore[operator]
                await request_replay(session, topic=topic)

            async def replayed() -> bool:
                return consumer.duplicates >= 3  # type: ignore[attr-defined, no-any-return]

            await _wait(replayed)
            assert consumer.applied == 3  # type: ignore[attr-defined]

            app = build_app(flow_settings)
            async with running_app(app) as client:
                r = await client.post(
                    "/v1/runs", json={"jurisdiction": "VI", "month": "2026-10"}, headers=ADMIN
                )
                assert r.status_code == 201, r.text
                run = r.json()
                assert run["collected"] == "402055.10"
                funds = (
                    await client.get(
                        "/v1/funds", params={"jurisdiction": "VI", "as_of": "2026-10-31"}, headers=AUDITOR
                    )
                ).json()
                assert (funds["collected"], funds["distributed"], funds["pending"]) == (
                    "402055.10",
                    "402055.10",
                    "0.00",
                )

            reader = AIOKafkaConsumer(
                RUNS,
                bootstrap_servers=flow_settings.kafka_bootstrap,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                group_id=f"flow-reader-{uuid.uuid4().hex[:8]}",
            )
            await reader.start()
            try:
                found = None
                deadline = asyncio.get_running_loop().time() + 30
                while found is None and asyncio.get_running_loop().time() < deadline:
                    batches = await reader.getmany(timeout_ms=500)
                    for records in batches.values():
                        for record in records:
                            event = json.loads(record.value or b"{}")
                            if event.get("subject") == run["id"]:
                                found = event
            finally:
                await reader.stop()
            assert found is not None
            assert found["type"] == "roomtax.distribution.run.posted.v1"
            assert found["data"]["collected"] == "402055.10"
            by_fund = {a["fund"]: a["amount"] for a in found["data"]["allocations"]}
            assert by_fund["vi_general_fund"] == "1700.00"
            # 15% x 2,000.00 = 300.00 to the Fund, 25% (75.00) to each §54(e)(2) earmark fund
            assert [
                by_fund[code]
                for code in (
                    "vi_tarf_virgin_islands_advertising",
                    "vi_tarf_st_john_advertising",
                    "vi_tarf_st_croix_advertising",
                    "vi_tarf_marine_industry_advertising",
                )
            ] == ["75.00"] * 4
