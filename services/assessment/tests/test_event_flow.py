"""Events through the real outbox relay and the real broker into the service's consumers."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from aiokafka import AIOKafkaConsumer
from assessment_factories import RUNTIME
from sqlalchemy import text

from assessment.consumers import consumers
from assessment.settings import AssessmentSettings
from servicekit.db import make_engine, make_sessionmaker
from servicekit.outbox import OutboxRelay, emit, request_replay
from servicekit.testing import BrokerProcess, fresh_database
from taxcore.events.assessment import COLLECTIONS
from taxcore.rules.declaration import DeclarationInput, compute_declaration

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.2)


class TestRelayAndBroker:
    async def test_filing_events_flow_into_accounts_and_postings_flow_out(
        self, broker: BrokerProcess
    ) -> None:
        url = await fresh_database("roomtax_test_assessment_flow", MIGRATIONS)
        settings = AssessmentSettings(environment="test", database_url=url, kafka_bootstrap=broker.bootstrap)
        engine = make_engine(url, application_name="assessment-flow-test", pool_size=5)
        upstream = make_sessionmaker(engine, service="filing")
        mine = make_sessionmaker(engine, service="assessment")
        account = f"PR-{uuid.uuid4().int % 10_000_000:07d}-9"
        inp = DeclarationInput(
            jurisdiction="PR",
            lodging_class="hotel",
            period="2025-01",
            room_revenue=Decimal("100000.00"),
            room_nights=300,
        )
        res = compute_declaration(inp)
        async with upstream() as s, s.begin():
            await emit(
                s,
                event_type="roomtax.registry.lodging.registered.v1",
                key=account,
                data={
                    "lodging_id": "l-flow",
                    "tax_account": account,
                    "jurisdiction": "PR",
                    "lodging_class": "hotel",
                    "casino": False,
                    "name": "Flow Inn",
                    "municipality": "Ponce",
                    "room_count": 30,
                    "operator_id": "op-flow",
                    "registered_on": "2024-06-01",
                    "statuses": [{"status": "active", "effective_from": "2024-06-01"}],
                },
            )
            await emit(
                s,
                event_type="roomtax.filing.declaration.filed.v1",
                key=account,
                data={
                    "declaration_id": str(uuid.uuid4()),
                    "filing_id": str(uuid.uuid4()),
                    "version": 1,
                    "supersedes": None,
                    "tax_account": account,
                    "lodging_id": "l-flow",
                    "jurisdiction": "PR",
                    "lodging_class": "hotel",
                    "period": "2025-01",
                    "filer_kind": "operator",
                    "filer_id": "op-flow",
                    "filed_on": "2025-02-10",
                    "due_date": "2025-02-10",
                    "late": False,
                    "input": inp.model_dump(mode="json"),
                    "taxable_base": str(res.taxable_base),
                    "tax": str(res.tax),
                    "impact_fee": "0.00",
                    "total_due": str(res.total_due),
                    "declared_tax": "9000.00",
                    "declared_total": "9000.00",
                    "findings": [],
                },
            )
            # 31 days late: 9,000 + §46 surcharge 450.00 + interest 76.44 (see test_penalties)
            await emit(
                s,
                event_type="roomtax.filing.payment.received.v1",
                key=account,
                data={
                    "payment_id": "pay-flow-1",
                    "tax_account": account,
                    "jurisdiction": "PR",
                    "amount": "9526.44",
                    "method": "ach",
                    "received_on": "2025-03-13",
                    "payer_kind": "operator",
                    "payer_id": "op-flow",
                    "periods": [{"period": "2025-01", "amount": "9526.44"}],
                },
            )

        stop = asyncio.Event()
        relay = OutboxRelay(
            dsn=settings.asyncpg_dsn,
            bootstrap=broker.bootstrap,
            name="flow-relay",
            retention=timedelta(days=1),
            check_interval=1.0,
        )
        workers = [asyncio.create_task(relay.run(stop))]
        for c in consumers(settings, mine, RUNTIME):
            workers.append(asyncio.create_task(c.run(stop)))

        async def scalar(sql: str) -> object:
            async with mine() as s:
                return (await s.execute(text(sql), {"a": account})).scalar()

        try:
            await eventually(
                lambda: _true(scalar("SELECT count(*) = 3 FROM collection_postings WHERE tax_account = :a")),
                timeout=60,
            )
            assert await scalar(
                "SELECT sum(amount) FROM collection_postings WHERE tax_account = :a"
            ) == Decimal("9526.44")
            assert await scalar("SELECT balance FROM account_summaries WHERE tax_account = :a") == Decimal(
                "0.00"
            )

            # what distribution would read from the broker adds up to the payment, to the cent
            reader = AIOKafkaConsumer(
                COLLECTIONS,
                bootstrap_servers=broker.bootstrap,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                group_id=f"flow-reader-{uuid.uuid4()}",
            )
            await reader.start()
            seen: dict[str, Decimal] = {}
            try:
                deadline = asyncio.get_running_loop().time() + 30
                while sum(seen.values(), Decimal(0)) != Decimal("9526.44"):
                    assert asyncio.get_running_loop().time() < deadline, seen
                    batch = await reader.getmany(timeout_ms=500)
                    for records in batch.values():
                        for rec in records:
                            data = json.loads(rec.value or b"")["data"]
                            if data["tax_account"] == account:
                                seen[data["posting_id"]] = Decimal(data["amount"])
            finally:
                await reader.stop()
            assert len(seen) == 3  # applied in PR order: interest, surcharge, tax (no fine was owed)
            components = await scalar(
                "SELECT string_agg(component || '=' || amount::text, ',' ORDER BY component) "
                "FROM collection_postings WHERE tax_account = :a"
            )
            assert components == "interest=76.44,penalty=450.00,tax=9000.00"

            # redelivery of everything: the inboxes drop it, nothing changes
            before = await scalar("SELECT count(*) FROM outbox WHERE key = :a")
            async with upstream() as s, s.begin():
                await request_replay(s, since=datetime.now(UTC) - timedelta(hours=1))
            await eventually(
                lambda: _true(scalar("SELECT count(*) = 0 FROM outbox WHERE published_at IS NULL"))
            )
            await asyncio.sleep(2.0)
            assert await scalar("SELECT count(*) FROM outbox WHERE key = :a") == before
            assert await scalar("SELECT count(*) FROM collection_postings WHERE tax_account = :a") == 3
            # (other suites' events on the shared broker may reach these consumers too: only ours count)
            assert (
                await scalar("SELECT count(*) FROM dead_letters WHERE payload->'data'->>'tax_account' = :a")
                == 0
            )
        finally:
            stop.set()
            await asyncio.gather(*workers, return_exceptions=True)
            await engine.dispose()


async def _true(value: Awaitable[object]) -> bool:
    return bool(await value)
