"""The outbox row's payload is written without a model: the same JSON, byte for byte, as the
CloudEvent model gives (``CloudEvent(...).model_dump_json(exclude_none=True)``)."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import asyncpg
import pytest

from servicekit import outbox
from taxcore.events import CloudEvent
from taxcore.events.filing import PaymentReceived, PeriodAmount

PAYMENT = PaymentReceived(
    payment_id="p-1",
    tax_account="PR-0000001-0",
    jurisdiction="PR",
    amount=Decimal("1234.5"),
    method="ach",
    received_on=date(2026, 11, 3),
    payer_kind="operator",
    payer_id="op-1",
    periods=[PeriodAmount(period="2026-10", amount=Decimal("1000"))],
)


@pytest.mark.parametrize(
    ("data", "subject"),
    [
        (PAYMENT, None),
        (PAYMENT, "declaration/d-1"),
        ({"a": "1.50", "nested": {"x": [1, None, True]}, "none": None, "día": "ñ"}, None),
        ({}, None),
    ],
)
@pytest.mark.parametrize(
    "moment", [datetime(2026, 12, 1, 22, 5, 3, 120, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)]
)
def test_envelope_is_the_models_json(
    monkeypatch: pytest.MonkeyPatch, data: Any, subject: str | None, moment: datetime
) -> None:
    class Clock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return moment

    monkeypatch.setattr(outbox, "datetime", Clock)
    _, payload_json = outbox._envelope(
        "filing",
        event_type="roomtax.filing.payment.received.v1",
        key="PR-0000001-0",
        data=data,
        subject=subject,
        topic=None,
        event_id="e-1",
    )
    payload = data.model_dump(mode="json") if not isinstance(data, dict) else data
    expected = CloudEvent(
        id="e-1",
        source="/roomtax/filing",
        type="roomtax.filing.payment.received.v1",
        subject=subject or "PR-0000001-0",
        time=moment,
        data=payload,
    ).model_dump_json(exclude_none=True)
    assert payload_json.decode() == expected


def _positional(sql: str) -> tuple[str, list[str]]:
    """``sql`` with its ``:name`` parameters as ``$1, $2, ...``, and the names in that order."""
    names: list[str] = []
    for name in re.findall(r"(?<![:\w]):(\w+)", sql):
        if name not in names:
            names.append(name)
    return re.sub(r"(?<![:\w]):(\w+)", lambda m: f"${names.index(m[1]) + 1}", sql), names


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The outbox's clock stopped: two writes of one event give the same envelope."""

    class Clock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime(2026, 12, 3, 14, 0, tzinfo=UTC)

    monkeypatch.setattr(outbox, "datetime", Clock)


class TestQueueOneEvent:
    """``QUEUE_ONE_CTES`` (one event, plain parameters) writes the row ``QUEUE_CTES`` writes."""

    async def test_the_same_outbox_row_as_the_arrays(self, frozen_clock: None, chassis_db: str) -> None:
        written = [
            (
                outbox.QUEUE_CTES,
                outbox.queue_params("filing", [outbox.OutboxEvent.of(PAYMENT, key="k", event_id="e-0")]),
            ),
            (
                outbox.QUEUE_ONE_CTES,
                outbox.queue_one_params("filing", outbox.OutboxEvent.of(PAYMENT, key="k", event_id="e-1")),
            ),
        ]
        conn = await asyncpg.connect(chassis_db.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            tx = conn.transaction()
            await tx.start()
            for ctes, params in written:
                sql, names = _positional(ctes + "SELECT 1")
                await conn.execute(sql, *[params[n] for n in names])
            rows = await conn.fetch(
                "SELECT event_id, topic, key, event_type, payload, traceparent FROM outbox "
                "WHERE event_id IN ('e-0', 'e-1') ORDER BY event_id"
            )
            await tx.rollback()
        finally:
            await conn.close()
        arrays, one = (dict(r) for r in rows)
        assert (arrays.pop("event_id"), one.pop("event_id")) == ("e-0", "e-1")
        assert one.pop("payload").replace('"e-1"', '"e-0"') == arrays.pop("payload")
        assert one == arrays


class TestCopyRecords:
    """``copy_records`` (a schedule's events, COPY) writes the rows ``QUEUE_CTES`` writes for the
    same events, in their order, and the relay hears of them at the commit."""

    async def test_the_same_rows_in_order_and_notified(self, frozen_clock: None, chassis_db: str) -> None:
        trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        events = [
            outbox.OutboxEvent.of(PAYMENT, key=f"k-{i % 2}", event_id=f"e-{i}", traceparent=trace)
            for i in range(3)
        ]
        dsn = chassis_db.replace("postgresql+asyncpg://", "postgresql://")
        conn, listener = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
        heard: list[str] = []
        await listener.add_listener(outbox.CHANNEL, lambda _c, _p, channel, _m: heard.append(channel))
        columns = "event_id, topic, key, event_type, payload, traceparent"
        try:
            tx = conn.transaction()
            await tx.start()
            sql, names = _positional(outbox.QUEUE_CTES + "SELECT 1")
            params = outbox.queue_params("filing", events)
            await conn.execute(sql, *[params[n] for n in names])
            inserted = await conn.fetch(f"SELECT {columns} FROM outbox WHERE event_id LIKE 'e-%' ORDER BY id")
            await tx.rollback()
            async with conn.transaction():
                records = [outbox.outbox_record("filing", e, traceparent=trace) for e in events]
                await outbox.copy_records(conn, records)
                await asyncio.sleep(0.2)
                assert heard == []  # not before the commit
            copied = await conn.fetch(f"SELECT {columns} FROM outbox WHERE event_id LIKE 'e-%' ORDER BY id")
            for _ in range(50):
                if heard:
                    break
                await asyncio.sleep(0.05)
            await conn.execute("DELETE FROM outbox WHERE event_id LIKE 'e-%'")
        finally:
            await conn.close()
            await listener.close()
        assert [dict(r) for r in copied] == [dict(r) for r in inserted]
        assert [r["event_id"] for r in copied] == ["e-0", "e-1", "e-2"]
        assert {r["traceparent"] for r in copied} == {trace}
        assert heard == [outbox.CHANNEL]
