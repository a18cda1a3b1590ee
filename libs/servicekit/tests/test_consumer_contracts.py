"""``parse_contracts``: a consumer of one contract parses each record straight into it, and handles
whatever that parse refuses exactly as a consumer without it does."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

import pytest
from aiokafka import ConsumerRecord
from servicekit_fixtures import TOPIC
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.consumer import EventConsumer, handles
from servicekit.db import make_engine, make_sessionmaker
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent, EventData
from taxcore.money import SignedMoney

SM = async_sessionmaker[AsyncSession]
BOOKED = "roomtax.chassis.booked.v1"


class Booked(EventData):
    event_type: ClassVar[str] = BOOKED
    topic: ClassVar[str] = TOPIC

    name: str
    amount: SignedMoney


@pytest.fixture
async def sm(chassis_db: str) -> AsyncIterator[SM]:
    engine = make_engine(chassis_db, application_name="chassis-contract-test", pool_size=2)
    yield make_sessionmaker(engine, service="chassis")
    await engine.dispose()


def value(data: dict[str, Any], *, type_: str = BOOKED) -> bytes:
    envelope = CloudEvent(id=str(uuid.uuid4()), source="/test", type=type_, time=datetime.now(UTC), data=data)
    return envelope.model_dump_json().encode()


def record(raw: bytes, offset: int) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(TOPIC, 0, offset, 0, 0, b"k", raw, None, 1, len(raw), ())


seen: list[tuple[Booked, CloudEvent]] = []


@handles(Booked)
async def on_booked(session: AsyncSession, booked: Booked, event: CloudEvent, runtime: Runtime) -> None:
    if booked.name == "poison":
        raise ValueError("this event can never be applied")
    seen.append((booked, event))


def consumer(sm: SM, name: str, *, parse_contracts: bool) -> EventConsumer:
    return EventConsumer(
        name=name, bootstrap="unused:0", topics=[TOPIC], sessionmaker=sm, handlers=[on_booked],
        batch_size=10, max_attempts=1, retry_delay=0, parse_contracts=parse_contracts,
    )  # fmt: skip


async def dead_letters(sm: SM, name: str) -> list[tuple[Any, ...]]:
    """(payload's data, the error's last line) of what ``name`` parked, in order."""
    async with sm() as session:
        rows = await session.execute(
            text("SELECT payload, error FROM dead_letters WHERE consumer = :c ORDER BY id"), {"c": name}
        )
        return [
            ((payload or {}).get("data", (payload or {}).get("raw")), error.strip().splitlines()[-1])
            for payload, error in rows
        ]


class TestParseContracts:
    async def test_the_handler_gets_the_model_parsed_from_the_record_not_validated_again(
        self, sm: SM
    ) -> None:
        seen.clear()
        raws = [value({"name": "a", "amount": "5"}), value({"name": "b", "amount": "-0.5"})]
        typed = consumer(sm, f"typed-{uuid.uuid4().hex[:8]}", parse_contracts=True)
        await typed.handle_records([record(raw, i) for i, raw in enumerate(raws)])
        assert [(b.name, b.amount) for b, _ in seen] == [("a", Decimal("5.00")), ("b", Decimal("-0.50"))]
        assert all(
            id(event.data) == id(booked) for booked, event in seen
        )  # the envelope's own data, once parsed
        seen.clear()
        plain = consumer(sm, f"plain-{uuid.uuid4().hex[:8]}", parse_contracts=False)
        await plain.handle_records([record(raw, i) for i, raw in enumerate(raws)])
        assert [(b.name, b.amount) for b, _ in seen] == [("a", Decimal("5.00")), ("b", Decimal("-0.50"))]
        assert [event.data for _, event in seen] == [json.loads(raw)["data"] for raw in raws]

    async def test_what_the_typed_parse_refuses_is_handled_as_without_it(self, sm: SM) -> None:
        """Data the contract refuses meets the handler's validation (parked with its error), another
        type is ignored, bytes that are no event are parked, a handler's failure parks the event with
        its data as it came; each as a consumer without ``parse_contracts`` does."""
        raws = [
            value({"name": "ok", "amount": "1"}),
            value({"name": "bad", "amount": "1.001"}),
            value({"name": "extra", "amount": "1", "other": 1}),
            value({"name": "x"}, type_="roomtax.chassis.other.v1"),
            b"not an event",
            value({"name": "poison", "amount": "7"}),
            value({"name": "ok2", "amount": "2.5"}),
        ]
        outcomes = {}
        for parse_contracts in (True, False):
            seen.clear()
            name = f"contracts-{parse_contracts}-{uuid.uuid4().hex[:8]}"
            c = consumer(sm, name, parse_contracts=parse_contracts)
            await c.handle_records([record(raw, i) for i, raw in enumerate(raws)])
            outcomes[parse_contracts] = (  # the failed batch's calls were rolled back: each event once
                list(dict.fromkeys((b.name, b.amount) for b, _ in seen)),
                (c.applied, c.parked, c.duplicates),
                await dead_letters(sm, name),
            )
        assert outcomes[True] == outcomes[False]
        applied, counts, parked = outcomes[True]
        assert applied == [("ok", Decimal("1.00")), ("ok2", Decimal("2.50"))]
        assert counts == (2, 4, 0)
        assert [data for data, _ in parked] == [
            "not an event",  # parked as the poll is parsed, before the batch
            {"name": "bad", "amount": "1.001"},
            {"name": "extra", "amount": "1", "other": 1},
            {"name": "poison", "amount": "7"},  # as it came, not "7.00"
        ]
        assert parked[3][1] == "ValueError: this event can never be applied"

    def test_it_needs_one_contract_handler_of_one_event_type(self, sm: SM) -> None:
        async def plain(session: AsyncSession, event: CloudEvent) -> None:
            return None

        for handlers in ({BOOKED: plain}, {BOOKED: on_booked, "roomtax.chassis.other.v1": on_booked}, {}):
            with pytest.raises(ValueError, match="one contract handler of one event type"):
                EventConsumer(
                    name="x", bootstrap="unused:0", topics=[], sessionmaker=sm, handlers=handlers,
                    parse_contracts=True,
                )  # fmt: skip
