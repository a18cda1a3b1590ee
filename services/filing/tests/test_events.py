"""The registry projection, and events through the real relay and broker."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, date, datetime, timedelta

from aiokafka import AIOKafkaConsumer
from fastapi import FastAPI
from filing_factories import DB, as_facilitator, make_lodging, new_id, project, scalar
from sqlalchemy import text

from filing.consumers import registry_projection
from servicekit.cli import relay_for
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import emit
from servicekit.testing import BrokerProcess
from taxcore.events import registry as ev
from taxcore.events.filing import DECLARATIONS


class TestProjection:
    async def test_snapshots_upsert_and_an_older_snapshot_changes_nothing(self, db: DB) -> None:
        lodging = await make_lodging(db, name="Old name")
        renamed = ev.LodgingUpdated.model_validate(
            {**lodging.model_dump(), "name": "New name", "casino": True}
        )
        later = datetime.now(UTC) + timedelta(seconds=5)
        assert await project(db, "roomtax.registry.lodging.updated.v1", renamed, at=later) == "applied"
        stale = ev.LodgingUpdated.model_validate({**lodging.model_dump(), "name": "Stale"})
        assert (
            await project(db, "roomtax.registry.lodging.updated.v1", stale, at=later - timedelta(seconds=1))
            == "applied"
        )
        row = await scalar(
            db, "SELECT name || ':' || casino FROM lodgings WHERE lodging_id = :i", i=lodging.lodging_id
        )
        assert row == "New name:true"

    async def test_authorization_end_is_projected(self, db: DB) -> None:
        lodging = await make_lodging(db)
        grant = ev.AuthorizationGranted(
            authorization_id=str(uuid.uuid4()),
            lodging_id=lodging.lodging_id,
            tax_account=lodging.tax_account,
            facilitator_id="fac-1",
            starts_on=date(2026, 1, 1),
            ends_on=None,
        )
        assert await project(db, "roomtax.registry.authorization.granted.v1", grant) == "applied"
        ended = ev.AuthorizationEnded.model_validate({**grant.model_dump(), "ends_on": date(2026, 6, 30)})
        assert await project(db, "roomtax.registry.authorization.ended.v1", ended) == "applied"
        assert await scalar(
            db, "SELECT ends_on FROM authorizations WHERE authorization_id = :i", i=grant.authorization_id
        ) == date(2026, 6, 30)


class TestEventsThroughTheBroker:
    async def test_registry_events_build_the_projection_and_declarations_are_published(
        self, service_app: FastAPI, filing_db: str, broker: BrokerProcess
    ) -> None:
        """Registry events go outbox -> relay -> Tansu -> projection consumer; the
        declaration filed against that projection goes outbox -> relay -> Tansu."""
        settings = service_app.state.settings
        engine = make_engine(filing_db, application_name="filing-e2e-test", pool_size=2)
        registry_side = make_sessionmaker(engine, service="registry")
        fac = new_id("fac")
        snapshot = ev.LodgingRegistered(
            lodging_id=str(uuid.uuid4()),
            tax_account=f"VI-{uuid.uuid4().int % 10_000_000:07d}-9",
            jurisdiction="VI",
            lodging_class="hotel",
            casino=False,
            name="Frenchman's Reef",
            municipality="St. Thomas",
            room_count=400,
            operator_id=new_id("op"),
            registered_on=date(2026, 9, 1),
            statuses=[ev.StatusPeriod(status="active", effective_from=date(2026, 9, 1))],
        )
        grant = ev.AuthorizationGranted(
            authorization_id=str(uuid.uuid4()),
            lodging_id=snapshot.lodging_id,
            tax_account=snapshot.tax_account,
            facilitator_id=fac,
            starts_on=date(2026, 9, 1),
            ends_on=None,
        )
        async with registry_side() as session, session.begin():
            await emit(
                session,
                event_type="roomtax.registry.lodging.registered.v1",
                key=snapshot.tax_account,
                data=snapshot,
            )
            await emit(
                session,
                event_type="roomtax.registry.authorization.granted.v1",
                key=snapshot.tax_account,
                data=grant,
            )
        stop = asyncio.Event()
        projection = registry_projection(settings, make_sessionmaker(engine, service="filing"))
        tasks = [
            asyncio.create_task(relay_for(settings).run(stop)),
            asyncio.create_task(projection.run(stop)),
        ]
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                async with engine.connect() as conn:
                    found = (
                        await conn.execute(
                            text("SELECT count(*) FROM authorizations WHERE facilitator_id = :f"), {"f": fac}
                        )
                    ).scalar()
                if found:
                    break
                await asyncio.sleep(0.2)
            assert found == 1, "the projection consumer never applied the registry events"
            client = service_app.state.test_client
            r = await client.post(
                "/v1/declarations",
                headers=as_facilitator(fac),
                json={
                    "lodging": snapshot.tax_account,
                    "period": "2026-09",
                    "room_revenue": "8000.00",
                    "room_nights": 20,
                    "intermediary_retained": "1000.00",
                    "declared": {"tax": "1000.00"},
                },
            )
            assert r.status_code == 201, r.text
            assert r.json()["computed"]["tax"] == "1125.00"  # VI taxes what the OTA keeps too
            event = await _first_event(broker.bootstrap, DECLARATIONS, snapshot.tax_account)
            assert event["type"] == "roomtax.filing.declaration.filed.v1"
            assert (event["data"]["declaration_id"], event["data"]["tax"]) == (r.json()["id"], "1125.00")
            assert event["source"] == "/roomtax/filing"
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=20)
            await engine.dispose()


async def _first_event(bootstrap: str, topic: str, key: str) -> dict[str, object]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        group_id=f"e2e-{uuid.uuid4().hex[:8]}",
        enable_auto_commit=False,
        metadata_max_age_ms=1000,
    )
    await consumer.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for record in records:
                    if record.key and record.key.decode() == key:
                        return json.loads(record.value or b"{}")  # type: ignore[no-any-return]
        raise AssertionError(f"no event keyed {key} on {topic}")
    finally:
        await consumer.stop()
