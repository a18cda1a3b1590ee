from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
import pytest
from distribution_factories import AUDITOR, collect, collection_event, scalar
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker


class TestCollectionPosted:
    async def test_books_cash_against_pending_referencing_the_event(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        event = collection_event(amount="1234.56", collected_on=date(2026, 7, 12))
        assert await collect(db, event=event) == "applied"
        r = await client.get("/v1/ledger/entries", params={"jurisdiction": "PR"}, headers=AUDITOR)
        [entry] = r.json()["items"]
        assert entry["kind"] == "collection"
        assert entry["event_id"] == event.id
        assert entry["effective_on"] == "2026-07-12"
        assert [(x["account"], x["amount"]) for x in entry["lines"]] == [
            ("cash:PR", "1234.56"),
            ("pending:PR", "-1234.56"),
        ]
        funds = (
            await client.get(
                "/v1/funds", params={"jurisdiction": "PR", "as_of": "2026-07-31"}, headers=AUDITOR
            )
        ).json()
        assert (funds["collected"], funds["pending"], funds["distributed"]) == ("1234.56", "1234.56", "0.00")
        assert funds["conserved"] is True

    async def test_entries_of_one_lodging(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """The demo's resume check sums its own lodgings' collections, not the platform's."""
        mine = collection_event(amount="10.00", collected_on=date(2026, 7, 1))
        other = collection_event(amount="99.00", collected_on=date(2026, 7, 1))
        for event in (mine, other):
            assert await collect(db, event=event) == "applied"
        account = mine.data["tax_account"]
        r = await client.get("/v1/ledger/entries", params={"tax_account": account}, headers=AUDITOR)
        assert [(e["event_id"], [x["amount"] for x in e["lines"]]) for e in r.json()["items"]] == [
            (mine.id, ["10.00", "-10.00"])
        ]

    async def test_redelivery_and_reused_posting_id_change_nothing(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        event = collection_event(amount="100.00", collected_on=date(2026, 7, 1), posting_id="p-1")
        assert await collect(db, event=event) == "applied"
        assert await collect(db, event=event) == "duplicate"
        again = collection_event(amount="100.00", collected_on=date(2026, 7, 1), posting_id="p-1")
        assert await collect(db, event=again) == "applied"
        assert await scalar(db, "SELECT count(*) FROM collections") == 1
        assert await scalar(db, "SELECT count(*) FROM journal_entries") == 1

    async def test_negative_delta_books_the_opposite_entry(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, amount="500.00", collected_on=date(2026, 7, 3))
        await collect(db, amount="-120.25", collected_on=date(2026, 7, 3))
        tb = (await client.get("/v1/ledger/trial-balance", headers=AUDITOR)).json()
        lines = {x["account"]: x for x in tb["accounts"]}
        assert lines["cash:PR"]["balance"] == "379.75"
        assert lines["pending:PR"]["balance"] == "-379.75"
        assert (tb["total_debit"], tb["total_credit"], tb["balanced"]) == ("620.25", "620.25", True)

    async def test_zero_posting_books_nothing(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        assert await collect(db, amount="0.00", collected_on=date(2026, 7, 3)) == "applied"
        assert await scalar(db, "SELECT count(*) FROM journal_entries") == 0


class TestAppendOnlyLedger:
    @pytest.mark.parametrize(
        "sql",
        [
            "UPDATE journal_lines SET amount = amount + 1",
            "DELETE FROM journal_lines",
            "UPDATE journal_entries SET description = 'x'",
            "DELETE FROM collections",
            "UPDATE accounts SET name = 'x'",
        ],
    )
    async def test_update_and_delete_are_refused(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession], sql: str
    ) -> None:
        await collect(db, amount="10.00", collected_on=date(2026, 7, 3))
        async with db() as session:
            with pytest.raises(DBAPIError, match="append-only"):
                async with session.begin():
                    await session.execute(text(sql))

    async def test_an_unbalanced_entry_is_refused(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, amount="10.00", collected_on=date(2026, 7, 3))
        async with db() as session:
            tx = await session.begin()
            insert_entry = text(
                "INSERT INTO journal_entries (jurisdiction, kind, effective_on, description, event_id) "
                "VALUES ('PR', 'collection', '2026-07-03', 'bad', 'evt-bad') RETURNING id"
            )
            entry = (await session.execute(insert_entry)).scalar()
            await session.execute(
                text(
                    "INSERT INTO journal_lines (entry_id, account_code, amount) VALUES "
                    "(:e, 'cash:PR', 10), (:e, 'pending:PR', -9.99)"
                ),
                {"e": entry},
            )
            with pytest.raises(DBAPIError, match="does not balance"):
                await session.execute(text("SET CONSTRAINTS ALL IMMEDIATE"))
            await tx.rollback()
        assert await scalar(db, "SELECT sum(amount) FROM journal_lines") == Decimal("0.00")
