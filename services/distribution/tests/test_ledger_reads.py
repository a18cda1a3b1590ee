"""The ledger's reads over stored and derived entries alike (migration 0010_derived_collection_entries).

A collection booked now is its own journal entry (the collection row); runs, and collections
booked before their entries or lines were derived, keep stored entries and lines. The listing
merges the two kinds in id order page by page, and the balances sum both, on each entry's day.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
from distribution_factories import AUDITOR, certify, collect, collection_event, run
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

# a collection whose entry and both lines are stored (booked before lines were derived)
_STORED_ENTRY_AND_LINES = """
WITH e AS (
    INSERT INTO stored_journal_entries (jurisdiction, kind, effective_on, description, event_id)
    VALUES ('PR', 'collection', DATE '2026-07-03', 'booked with stored lines', 'stored-lines-event')
    RETURNING id
), l AS (
    INSERT INTO stored_journal_lines (entry_id, account_code, amount, rule, section)
    SELECT e.id, x.code, x.amount, 'collection.posted', '§28' FROM e,
        (VALUES ('cash:PR', 12.34), ('pending:PR', -12.34)) AS x(code, amount)
)
INSERT INTO collections (posting_id, event_id, payment_id, tax_account, jurisdiction, lodging_class, period,
    component, amount, collected_on, section, entry_id, lines_derived)
SELECT 'stored-lines', 'stored-lines-event', 'pay-1', 'PR-S1', 'PR', 'hotel', '2026-06', 'tax', 12.34,
    DATE '2026-07-03', '§28', e.id, false FROM e
"""

# a collection whose lines are derived but whose entry is stored, on a day other than the
# row's (one the migration could not derive: the entry is the one that gives the lines their day)
_STORED_ENTRY_DERIVED_LINES = """
WITH e AS (
    INSERT INTO stored_journal_entries (jurisdiction, kind, effective_on, description, event_id)
    VALUES ('PR', 'collection', DATE '2026-07-04', 'stored entry', 'stored-entry-event')
    RETURNING id
)
INSERT INTO collections (posting_id, event_id, payment_id, tax_account, jurisdiction, lodging_class, period,
    component, amount, collected_on, section, entry_id, pending_section)
SELECT 'stored-entry', 'stored-entry-event', 'pay-2', 'PR-S2', 'PR', 'hotel', '2026-06', 'tax', 5.00,
    DATE '2026-07-20', '§28', e.id, '§29' FROM e
"""


async def pages(client: httpx.AsyncClient, **params: str) -> list[dict[str, Any]]:
    """Every page of the entries listing, two entries a page."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, "limit": "2", **({"cursor": cursor} if cursor else {})}
        r = await client.get("/v1/ledger/entries", params=query, headers=AUDITOR)
        assert r.status_code == 200, r.text
        items += r.json()["items"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return items


async def totals(client: httpx.AsyncClient, **params: str) -> dict[str, tuple[str, str]]:
    r = await client.get("/v1/ledger/trial-balance", params=params, headers=AUDITOR)
    assert r.status_code == 200, r.text
    return {
        a["account"]: (a["debit"], a["credit"])
        for a in r.json()["accounts"]
        if a["account"].split(":")[0] in ("cash", "pending")
    }


class TestEntriesListing:
    async def test_pages_merge_stored_and_derived_entries_in_id_order(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        before = [collection_event(amount=f"{i}00.00", collected_on=date(2026, 7, i)) for i in (1, 2, 3)]
        for event in before:
            assert await collect(db, event=event) == "applied"
        await certify(client, 2027, "1200000.00")
        posted = await run(client, "PR", "2026-07")
        vi = collection_event(amount="7.00", collected_on=date(2026, 8, 1), jurisdiction="VI")
        after = [collection_event(amount=f"{i}0.00", collected_on=date(2026, 8, i)) for i in (1, 2)]
        for event in (after[0], vi, after[1]):
            assert await collect(db, event=event) == "applied"

        pr = await pages(client, jurisdiction="PR")
        assert [(e["kind"], e["event_id"]) for e in pr] == [
            *(("collection", e.id) for e in before),
            ("run", None),
            *(("collection", e.id) for e in after),
        ]
        assert [e["id"] for e in pr] == sorted(e["id"] for e in pr)
        assert pr[3]["id"] == posted["journal_entry_id"]
        assert pr[3]["lines"][0] == {
            "account": "pending:PR",
            "amount": "600.00",
            "rule": "distribution.run",
            "section": None,
        }
        everything = await pages(client)
        assert [e["event_id"] for e in everything] == [
            *(e.id for e in before),
            None,
            after[0].id,
            vi.id,
            after[1].id,
        ]
        assert [e["event_id"] for e in await pages(client, jurisdiction="VI")] == [vi.id]
        assert [e["kind"] for e in await pages(client, run_id=posted["id"])] == ["run"]
        lodging = after[1].data["tax_account"]
        assert [e["event_id"] for e in await pages(client, tax_account=lodging)] == [after[1].id]


class TestBalances:
    async def test_stored_and_derived_lines_on_their_entrys_day(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        assert await collect(db, amount="100.00", collected_on=date(2026, 7, 10)) == "applied"
        async with db() as session:  # the accounts exist now
            await session.execute(text(_STORED_ENTRY_AND_LINES))
            await session.execute(text(_STORED_ENTRY_DERIVED_LINES))
            await session.commit()

        # the stored-entry row counts from its entry's day (07-04), not from its own (07-20)
        assert await totals(client, as_of="2026-07-02") == {
            "cash:PR": ("0.00", "0.00"),
            "pending:PR": ("0.00", "0.00"),
        }
        assert await totals(client, as_of="2026-07-05") == {
            "cash:PR": ("17.34", "0.00"),
            "pending:PR": ("0.00", "17.34"),
        }
        for params in ({"as_of": "2026-07-31"}, {}, {"jurisdiction": "PR"}):
            assert await totals(client, **params) == {
                "cash:PR": ("117.34", "0.00"),
                "pending:PR": ("0.00", "117.34"),
            }
        assert await totals(client, jurisdiction="VI") == {}
        listed = {e["event_id"]: e for e in await pages(client, jurisdiction="PR")}
        assert [(x["account"], x["amount"], x["section"]) for x in listed["stored-lines-event"]["lines"]] == [
            ("cash:PR", "12.34", "§28"),
            ("pending:PR", "-12.34", "§28"),
        ]
        assert listed["stored-entry-event"]["effective_on"] == "2026-07-04"
        assert [(x["account"], x["amount"], x["section"]) for x in listed["stored-entry-event"]["lines"]] == [
            ("cash:PR", "5.00", "§28"),
            ("pending:PR", "-5.00", "§29"),
        ]
