"""Events typed by their contract: emit derives type and topic, handlers receive the parsed model."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.consumer import EventConsumer, handler_map, handles
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import OutboxEvent, emit, emit_many
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent
from taxcore.events.filing import PaymentReceived, PeriodAmount
from taxcore.events.registry import LodgingSnapshot, LodgingStatusChanged, LodgingUpdated, OperatorRegistered

SM = async_sessionmaker[AsyncSession]


@pytest.fixture
async def sm(chassis_db: str) -> AsyncIterator[SM]:
    engine = make_engine(chassis_db, application_name="typed-events-test", pool_size=2)
    yield make_sessionmaker(engine, service="chassis")
    await engine.dispose()


async def outbox_row(sm: SM, event_id: str) -> tuple[str, str, str, dict[str, object]]:
    async with sm() as session:
        row = (
            await session.execute(
                text("SELECT topic, key, event_type, payload FROM outbox WHERE event_id = :e"),
                {"e": event_id},
            )
        ).one()
    return row[0], row[1], row[2], row[3]


def payment(payment_id: str) -> PaymentReceived:
    return PaymentReceived(
        payment_id=payment_id,
        tax_account="PR-000042-7",
        jurisdiction="PR",
        amount=Decimal("120.50"),
        method="ach",
        received_on=date(2026, 11, 10),
        payer_kind="operator",
        payer_id="op-1",
        periods=[PeriodAmount(period="2026-10", amount=Decimal("100.00"))],
    )


class TestEmitByContract:
    async def test_the_contract_class_gives_type_and_topic(self, sm: SM) -> None:
        async with sm() as session, session.begin():
            eid = await emit(session, payment("pay-typed-1"), key="PR-000042-7")
        topic, key, event_type, envelope = await outbox_row(sm, eid)
        assert (topic, key, event_type) == (
            "filing.payments",
            "PR-000042-7",
            "roomtax.filing.payment.received.v1",
        )
        assert envelope["type"] == "roomtax.filing.payment.received.v1"
        data = envelope["data"]
        assert isinstance(data, dict)
        assert (data["payment_id"], data["amount"], data["periods"]) == (
            "pay-typed-1",
            "120.50",
            [{"period": "2026-10", "amount": "100.00"}],
        )

    async def test_the_same_row_as_the_old_call_form(self, sm: SM) -> None:
        event = OperatorRegistered(operator_id="op-typed", name="Casita", email=None)
        async with sm() as session, session.begin():
            new = await emit(session, event, key="op-typed", event_id=str(uuid.uuid4()))
            old = await emit(
                session, event_type="roomtax.registry.operator.registered.v1", key="op-typed", data=event
            )
        (t1, k1, y1, p1), (t2, k2, y2, p2) = await outbox_row(sm, new), await outbox_row(sm, old)
        assert (t1, k1, y1) == (t2, k2, y2) == ("registry.parties", "op-typed", y1)
        assert y1 == "roomtax.registry.operator.registered.v1"
        assert p1["data"] == p2["data"] == {"operator_id": "op-typed", "name": "Casita", "email": None}

    async def test_emit_many_with_contract_events(self, sm: SM) -> None:
        async with sm() as session, session.begin():
            ids = await emit_many(
                session,
                [
                    OutboxEvent.of(payment(f"pay-many-{n}"), key="PR-000042-7", event_id=str(uuid.uuid4()))
                    for n in (1, 2)
                ],
            )
        rows = [await outbox_row(sm, i) for i in ids]
        assert [(r[0], r[2]) for r in rows] == [("filing.payments", "roomtax.filing.payment.received.v1")] * 2

    async def test_a_payload_part_is_not_an_event(self, sm: SM) -> None:
        async with sm() as session:
            with pytest.raises(TypeError, match="PeriodAmount is not an event contract"):
                await emit(session, PeriodAmount(period="2026-10", amount=Decimal("1.00")), key="x")
            with pytest.raises(TypeError, match="not both"):
                await emit(session, payment("p"), key="x", event_type="roomtax.filing.payment.received.v1")
            with pytest.raises(TypeError, match="needs an event contract"):
                await emit(session, key="x")


received: list[tuple[str, object]] = []


@handles(LodgingUpdated, LodgingStatusChanged)
async def on_snapshot(
    session: AsyncSession, snap: LodgingSnapshot, event: CloudEvent, runtime: Runtime
) -> None:
    received.append((event.id, snap))


class TestHandlersByContract:
    def _event(self, event_type: str, data: dict[str, object]) -> CloudEvent:
        return CloudEvent(
            id=str(uuid.uuid4()), source="/test", type=event_type, time=datetime.now(UTC), data=data
        )

    def test_a_consumer_keys_contract_handlers_by_their_types(self, sm: SM) -> None:
        consumer = EventConsumer(
            name="typed", bootstrap="unused:0", topics=[], sessionmaker=sm, handlers=[on_snapshot]
        )
        assert consumer.handlers == {
            "roomtax.registry.lodging.updated.v1": on_snapshot,
            "roomtax.registry.lodging.status_changed.v1": on_snapshot,
        }

    def test_a_type_handled_twice_is_refused(self) -> None:
        @handles(LodgingUpdated)
        async def other(
            session: AsyncSession, snap: LodgingUpdated, event: CloudEvent, runtime: Runtime
        ) -> None: ...

        with pytest.raises(ValueError, match="roomtax.registry.lodging.updated.v1 has two handlers"):
            handler_map([on_snapshot, other])

    async def test_the_handler_receives_the_parsed_contract(self, sm: SM) -> None:
        consumer = EventConsumer(
            name="typed-apply", bootstrap="unused:0", topics=[], sessionmaker=sm, handlers=[on_snapshot]
        )
        snapshot = {
            "lodging_id": "lod-9",
            "tax_account": "PR-000099-1",
            "jurisdiction": "PR",
            "lodging_class": "hotel",
            "casino": False,
            "name": "Casa Nueve",
            "municipality": "Ponce",
            "room_count": 9,
            "operator_id": "op-9",
            "registered_on": "2026-01-05",
            "statuses": [{"status": "active", "effective_from": "2026-01-05"}],
        }
        event = self._event("roomtax.registry.lodging.status_changed.v1", snapshot)
        received.clear()
        assert await consumer.apply(event, consumer.handlers[event.type]) == "applied"
        assert await consumer.apply(event, consumer.handlers[event.type]) == "duplicate"
        ((event_id, model),) = received
        assert event_id == event.id
        assert type(model) is LodgingStatusChanged
        assert isinstance(model, LodgingStatusChanged)
        assert (model.tax_account, model.room_count, model.registered_on) == (
            "PR-000099-1",
            9,
            date(2026, 1, 5),
        )
        assert json.loads(model.model_dump_json())["statuses"] == [
            {"status": "active", "effective_from": "2026-01-05"}
        ]
