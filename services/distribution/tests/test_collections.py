from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
import pytest
from distribution_factories import (
    AUDITOR,
    collect,
    collection_event,
    collection_record,
    collections_consumer,
    scalar,
)
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError
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

    async def test_a_posting_booked_is_refused_again_by_the_database(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """What keeps a posting from being booked twice besides the inbox (``event_id`` is not
        unique: migration 0012): ``uq_collections_posting_id``, whatever the event id."""
        event = collection_event(amount="100.00", collected_on=date(2026, 7, 1), posting_id="p-1")
        assert await collect(db, event=event) == "applied"
        columns = (
            "posting_id event_id payment_id tax_account jurisdiction lodging_class period component amount "
            "collected_on section entry_id pending_section description entry_derived"
        ).split()
        values = {"posting_id": "'p-1'", "event_id": "'evt-other'", "entry_derived": "true"}
        values["entry_id"] = "nextval(pg_get_serial_sequence('stored_journal_entries', 'id'))"
        again = (
            f"INSERT INTO collections ({', '.join(columns)}) "
            f"SELECT {', '.join(values.get(c, c) for c in columns)} FROM collections"
        )
        async with db() as session:
            with pytest.raises(IntegrityError, match="uq_collections_posting_id"):
                async with session.begin():
                    await session.execute(text(again))
        assert await scalar(db, "SELECT count(*) FROM collections") == 1

    async def test_a_row_that_is_its_entry_without_its_lines_is_refused(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """An entry derived from a row balances only through the row's two derived lines
        (``ck_collections_entry_with_lines``; its description needs nothing stored since 0013)."""
        async with db() as session:
            with pytest.raises(IntegrityError, match="ck_collections_entry_with_lines"):
                async with session.begin():
                    await session.execute(
                        text(
                            "INSERT INTO collections (posting_id, event_id, payment_id, tax_account, "
                            "jurisdiction, lodging_class, period, component, amount, collected_on, section, "
                            "entry_id, lines_derived, entry_derived) VALUES ('p-bad', 'evt-bad', 'pay', "
                            "'PR-1', 'PR', 'hotel', '2026-07', 'tax', 1, '2026-07-03', '§28', "
                            "nextval(pg_get_serial_sequence('stored_journal_entries', 'id')), false, true)"
                        )
                    )
        assert await scalar(db, "SELECT count(*) FROM collections") == 0

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


class TestCollectionsInBatches:
    """The consumer applies a poll's records in batches: one statement books a batch's postings,
    with the same entries, in the same order, as one event per transaction."""

    async def test_each_pending_line_cites_the_section_of_its_jurisdiction_and_day(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """The citation of a batch's pending lines is looked up once per jurisdiction and day
        collected and joined to the postings: none before the statute's first day (PR Act
        272 from 2003-09-01), the jurisdiction's own after it."""
        events = [
            collection_event(amount="5.00", collected_on=date(2003, 8, 31), posting_id="p-a"),
            collection_event(amount="6.00", collected_on=date(2026, 7, 2), posting_id="p-b"),
            collection_event(
                amount="7.00", collected_on=date(2026, 7, 2), jurisdiction="VI", posting_id="p-c"
            ),
            collection_event(amount="-8.00", collected_on=date(2003, 9, 1), posting_id="p-d"),
            collection_event(amount="9.00", collected_on=date(2003, 8, 31), posting_id="p-e"),
        ]
        consumer = collections_consumer(db)
        await consumer.handle_records([collection_record(e, i) for i, e in enumerate(events)])
        assert (consumer.batches, consumer.applied, consumer.parked) == (1, 5, 0)
        r = await client.get("/v1/ledger/entries", headers=AUDITOR)
        assert [
            [(x["account"], x["amount"], x["rule"], x["section"]) for x in e["lines"]]
            for e in r.json()["items"]
        ] == [
            [
                ("cash:PR", "5.00", "collection.posted", "§28"),
                ("pending:PR", "-5.00", "collection.posted", None),
            ],
            [
                ("cash:PR", "6.00", "collection.posted", "§28"),
                ("pending:PR", "-6.00", "collection.posted", "§28; §31"),
            ],
            [
                ("cash:VI", "7.00", "collection.posted", "§54(f)"),
                ("pending:VI", "-7.00", "collection.posted", "§54(f); §54(e)"),
            ],
            [
                ("cash:PR", "-8.00", "collection.posted", "§28"),
                ("pending:PR", "8.00", "collection.posted", "§28; §31"),
            ],
            [
                ("cash:PR", "9.00", "collection.posted", "§28"),
                ("pending:PR", "-9.00", "collection.posted", None),
            ],
        ]

    async def test_each_entry_describes_its_posting_in_words(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """The view ``collection_entries`` writes the sentence from the row (migration
        0013_derived_descriptions): the amount as the event's cents, two decimals, signed."""
        events = [
            collection_event(
                amount=amount, collected_on=date(2026, 7, 2), posting_id=f"p-{i}", refund_id=refund
            )
            for i, (amount, refund) in enumerate(
                [
                    ("100", None),
                    ("-40.5", None),
                    ("0.01", None),
                    ("9999999999999999.99", None),
                    ("-3.10", "r-9"),
                ]
            )
        ]
        consumer = collections_consumer(db)
        await consumer.handle_records([collection_record(e, i) for i, e in enumerate(events)])
        r = await client.get("/v1/ledger/entries", headers=AUDITOR)
        assert [e["description"] for e in r.json()["items"]] == [
            f"collection p-{i} of payment {e.data['payment_id']}: tax {amount} for {e.data['tax_account']} "
            f"2026-07{tail}"
            for i, (e, amount, tail) in enumerate(
                zip(
                    events,
                    ["100.00", "-40.50", "0.01", "9999999999999999.99", "-3.10"],
                    ["", "", "", "", " (give-back of refund r-9)"],
                    strict=True,
                )
            )
        ]
        assert await scalar(db, "SELECT count(*) FROM collections WHERE description IS NULL") == 5

    async def test_a_batch_books_the_postings_text_as_it_came(
        self, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """The batch's columns travel as JSON arrays: quotes, backslashes, control characters,
        non-ASCII and an SQL NULL's look-alike come back as they were sent."""
        odd = ['a "quoted" \\ id', "tab\tnew\nline", "ñandú §28 €", "NULL", "null", "{1,2}"]
        events = [
            collection_event(
                amount=f"{i + 1}.25",
                collected_on=date(2026, 7, 2),
                posting_id=f"p-{text_}",
                payment_id=text_,
                refund_id=text_ if i % 2 else None,
            )
            for i, text_ in enumerate(odd)
        ]
        consumer = collections_consumer(db)
        await consumer.handle_records([collection_record(e, i) for i, e in enumerate(events)])
        assert (consumer.applied, consumer.parked) == (6, 0)
        async with db() as session:
            rows = (
                await session.execute(
                    text(
                        "SELECT posting_id, payment_id, refund_id, amount::text, collected_on, event_id "
                        "FROM collections ORDER BY id"
                    )
                )
            ).all()
        assert [tuple(r) for r in rows] == [
            (f"p-{t}", t, t if i % 2 else None, f"{i + 1}.25", date(2026, 7, 2), e.id)
            for i, (t, e) in enumerate(zip(odd, events, strict=True))
        ]

    async def test_a_batch_books_each_new_posting_once_in_order(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        booked = collection_event(amount="7.00", collected_on=date(2026, 7, 1), posting_id="p-old")
        assert await collect(db, event=booked) == "applied"
        first = collection_event(amount="100.00", collected_on=date(2026, 7, 2), posting_id="p-1")
        events = [
            first,
            collection_event(amount="-40.50", collected_on=date(2026, 7, 2), posting_id="p-2"),
            collection_event(amount="0.00", collected_on=date(2026, 7, 2)),
            collection_event(
                amount="25.00", collected_on=date(2026, 7, 3), jurisdiction="VI", posting_id="p-3"
            ),
            first,  # redelivered in the same poll: the inbox drops it
            collection_event(amount="999.00", collected_on=date(2026, 7, 2), posting_id="p-1"),  # reused id
            collection_event(
                amount="7.00", collected_on=date(2026, 7, 1), posting_id="p-old"
            ),  # booked before
            collection_event(amount="3.10", collected_on=date(2026, 7, 4), posting_id="p-4", refund_id="r-9"),
        ]
        consumer = collections_consumer(db)
        await consumer.handle_records([collection_record(e, i) for i, e in enumerate(events)])
        assert (consumer.batches, consumer.applied, consumer.duplicates, consumer.parked) == (1, 7, 1, 0)
        r = await client.get("/v1/ledger/entries", headers=AUDITOR)
        assert [
            (e["event_id"], e["effective_on"], [(x["account"], x["amount"]) for x in e["lines"]])
            for e in r.json()["items"]
        ] == [
            (booked.id, "2026-07-01", [("cash:PR", "7.00"), ("pending:PR", "-7.00")]),
            (first.id, "2026-07-02", [("cash:PR", "100.00"), ("pending:PR", "-100.00")]),
            (events[1].id, "2026-07-02", [("cash:PR", "-40.50"), ("pending:PR", "40.50")]),
            (events[3].id, "2026-07-03", [("cash:VI", "25.00"), ("pending:VI", "-25.00")]),
            (events[7].id, "2026-07-04", [("cash:PR", "3.10"), ("pending:PR", "-3.10")]),
        ]
        [give_back] = [e for e in r.json()["items"] if e["event_id"] == events[7].id]
        assert give_back["description"] == (
            f"collection p-4 of payment {events[7].data['payment_id']}: tax 3.10 for "
            f"{events[7].data['tax_account']} 2026-07 (give-back of refund r-9)"
        )
        collections = await scalar(
            db, "SELECT string_agg(posting_id || '=' || amount::text, ',' ORDER BY id) FROM collections"
        )
        assert collections == "p-old=7.00,p-1=100.00,p-2=-40.50,p-3=25.00,p-4=3.10"
        tb = (await client.get("/v1/ledger/trial-balance", headers=AUDITOR)).json()
        assert (tb["total_debit"], tb["total_credit"], tb["balanced"]) == ("175.60", "175.60", True)

    async def test_a_posting_twice_in_a_batch_keeps_the_other_rows_columns(
        self, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """A posting_id repeated in a batch (under another event id) is booked once, the first,
        before the statement (``add_collections``): the rows after it keep their own pending
        citation, and the entries' ids follow the batch's order, one per row booked."""
        july, before_the_act = date(2026, 7, 2), date(2003, 8, 31)
        events = [
            collection_event(amount="1.00", collected_on=july, posting_id="p-1"),
            collection_event(amount="2.00", collected_on=july, jurisdiction="VI", posting_id="p-1"),
            collection_event(amount="3.00", collected_on=july, jurisdiction="VI", posting_id="p-2"),
            collection_event(amount="4.00", collected_on=before_the_act, posting_id="p-3"),
            collection_event(amount="5.00", collected_on=july, posting_id="p-2"),
            collection_event(amount="6.00", collected_on=july, posting_id="p-4"),
        ]
        consumer = collections_consumer(db)
        await consumer.handle_records([collection_record(e, i) for i, e in enumerate(events)])
        assert (consumer.batches, consumer.applied, consumer.parked) == (1, 6, 0)
        async with db() as session:
            rows = (
                await session.execute(
                    text(
                        "SELECT posting_id, event_id, jurisdiction, amount::text, pending_section, "
                        "entry_id - min(entry_id) OVER () FROM collections ORDER BY id"
                    )
                )
            ).all()
        assert [tuple(r) for r in rows] == [
            ("p-1", events[0].id, "PR", "1.00", "§28; §31", 0),
            ("p-2", events[2].id, "VI", "3.00", "§54(f); §54(e)", 1),
            ("p-3", events[3].id, "PR", "4.00", None, 2),
            ("p-4", events[5].id, "PR", "6.00", "§28; §31", 3),
        ]


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

    @pytest.mark.parametrize(
        ("sql", "refusal"),
        [
            pytest.param(
                "WITH e AS (INSERT INTO journal_entries (jurisdiction, kind, effective_on, description, "
                "event_id) VALUES ('PR', 'collection', '2026-07-03', 'bad', 'evt-bad') RETURNING id) "
                "INSERT INTO journal_lines (entry_id, account_code, amount) "
                "SELECT id, a, m FROM e, (VALUES ('cash:PR', 10), ('pending:PR', -9.99)) AS l(a, m)",
                "journal entry \\d+ does not balance: 2 lines summing to 0.01",
                id="lines-off-by-a-cent",
            ),
            pytest.param(
                "INSERT INTO journal_entries (jurisdiction, kind, effective_on, description, event_id) "
                "VALUES ('PR', 'collection', '2026-07-03', 'bad', 'evt-bad')",
                "journal entry \\d+ does not balance: 0 lines summing to 0",
                id="entry-without-lines",
            ),
            pytest.param(
                "INSERT INTO journal_lines (entry_id, account_code, amount) "
                "SELECT min(id), 'cash:PR', 5 FROM journal_entries",
                "journal entry \\d+ does not balance: the lines added sum to 5.00",
                id="line-added-to-a-booked-entry",
            ),
        ],
    )
    async def test_an_unbalanced_entry_is_refused_by_its_statement(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession], sql: str, refusal: str
    ) -> None:
        """Checked when the statement ends, not at COMMIT: nothing unbalanced is ever visible,
        even inside the transaction that wrote it."""
        await collect(db, amount="10.00", collected_on=date(2026, 7, 3))
        async with db() as session:
            with pytest.raises(DBAPIError, match=refusal):
                async with session.begin():
                    await session.execute(text(sql))
        assert await scalar(db, "SELECT sum(amount) FROM journal_lines") == Decimal("0.00")
        assert await scalar(db, "SELECT count(*) FROM journal_entries WHERE event_id = 'evt-bad'") == 0

    @pytest.mark.parametrize(
        ("sql", "refusal"),
        [
            pytest.param(
                "INSERT INTO journal_lines (entry_id, account_code, amount) "
                "VALUES (-1, 'cash:PR', 5), (-1, 'pending:PR', -5)",
                "journal_lines refer to journal entry -1, which does not exist",
                id="lines-of-no-entry",
            ),
            pytest.param(
                "WITH e AS (INSERT INTO journal_entries (jurisdiction, kind, effective_on, description, "
                "event_id) VALUES ('PR', 'collection', '2026-07-03', 'bad', 'evt-bad') RETURNING id) "
                "INSERT INTO journal_lines (entry_id, account_code, amount) "
                "SELECT id, a, m FROM e, (VALUES ('cash:PR', 10), ('nowhere:PR', -10)) AS l(a, m)",
                "journal_lines refer to account nowhere:PR, which does not exist",
                id="line-on-no-account",
            ),
            pytest.param(
                "INSERT INTO collections (posting_id, event_id, payment_id, tax_account, jurisdiction, "
                "lodging_class, period, component, amount, collected_on, section, entry_id) VALUES "
                "('p-bad', 'evt-bad', 'pay', 'PR-1', 'PR', 'hotel', '2026-07', 'tax', 1, '2026-07-03', "
                "'§28', -1)",
                "collections refer to journal entry -1, which does not exist",
                id="collection-of-no-entry",
            ),
            pytest.param(
                "INSERT INTO collections (posting_id, event_id, payment_id, tax_account, jurisdiction, "
                "lodging_class, period, component, amount, collected_on, section, entry_id, pending_section, "
                "description, entry_derived) VALUES "
                "('p-ok', 'evt-ok', 'pay', 'PR-1', 'PR', 'hotel', '2026-07', 'tax', 1, '2026-07-03', '§28', "
                "nextval(pg_get_serial_sequence('stored_journal_entries', 'id')), '§28', 'ok', true), "
                "('p-bad', 'evt-bad', 'pay', 'PR-1', 'PR', 'hotel', '2026-07', 'tax', 1, '2026-07-03', "
                "'§28', -1, NULL, NULL, false)",
                "collections refer to journal entry -1, which does not exist",
                id="collection-of-no-entry-next-to-one-that-is-its-entry",
            ),
            pytest.param(
                "INSERT INTO collections (posting_id, event_id, payment_id, tax_account, jurisdiction, "
                "lodging_class, period, component, amount, collected_on, section, entry_id, pending_section, "
                "description, entry_derived) VALUES "
                "('p-bad', 'evt-bad', 'pay', 'XX-1', 'XX', 'hotel', '2026-07', 'tax', 1, '2026-07-03', "
                "'§28', nextval(pg_get_serial_sequence('stored_journal_entries', 'id')), '§28', 'bad', true)",
                "collections refer to account cash:XX, which does not exist",
                id="collection-that-is-its-entry-on-no-account",
            ),
        ],
    )
    async def test_a_reference_to_nothing_is_refused_by_its_statement(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession], sql: str, refusal: str
    ) -> None:
        """Lines and collection rows refer to an entry and an account that exist, checked when
        the statement ends (with the foreign keys' error code); accounts and entries are never
        deleted, so what was referred to stays."""
        await collect(db, amount="10.00", collected_on=date(2026, 7, 3))
        async with db() as session:
            with pytest.raises(IntegrityError, match=refusal):
                async with session.begin():
                    await session.execute(text(sql))
        assert await scalar(db, "SELECT count(*) FROM journal_lines") == 2
        assert await scalar(db, "SELECT count(*) FROM collections") == 1


class TestCollectionIdentifiers:
    async def test_posting_and_tax_account_compare_as_bytes(
        self, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """Migration 0014_identifiers_collate_c: the two identifiers that lead an index are "C";
        the jurisdiction (the account codes are made of it) keeps the database's collation."""
        collations = await scalar(
            db,
            "SELECT string_agg(column_name || '=' || coalesce(collation_name, 'default'), ',' "
            "ORDER BY column_name) FROM information_schema.columns WHERE table_name = 'collections' "
            "AND column_name IN ('posting_id', 'tax_account', 'jurisdiction')",
        )
        assert collations == "jurisdiction=default,posting_id=C,tax_account=C"
