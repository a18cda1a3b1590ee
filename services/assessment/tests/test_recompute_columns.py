"""A batch's recomputation loads of the liabilities only the columns it reads
(``accounts.repository._RECOMPUTED``), and gives exactly what it gives from the ORM's full rows.

The recomputation (``service.recompute_accounts``) reads its facts as records
(``load_records_many(columns="recompute")``): named tuples without the JSONB ``trace``, ``input``
and ``findings``, the declared amounts and the ids. A reader of a column left out would fail on
the missing attribute; these tests run every reader the recomputation has (the allocation, the
summaries, the postings and their events, credits and their PR §42 limits, the lodging class of
an account without a lodging) on accounts with amendments, intermediaries' rows, designated
payments, a reversal and a credit, from both loads, and compare the results exactly.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from assessment_factories import RUNTIME, Bus, due, new_account
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.accounts import repository, service
from assessment.accounts.ledger import (
    BalanceCache,
    Facts,
    account_state,
    current_applications,
    final_balances,
    latest_fact_date,
    refundable_until,
)
from assessment.models import Liability

DB = async_sessionmaker[AsyncSession]


def recomputed(facts: Facts, on: date) -> dict[str, Any]:
    """What ``service._recompute_loaded`` computes of an account (nothing posted or stored yet),
    with a memo of its own."""
    facts.balances = BalanceCache(law=RUNTIME.law)
    state = account_state(facts, None)
    finals = final_balances(state)
    credits: dict[str, Decimal] = {}
    for credit in state.credits:
        credits[credit.payment_id] = credits.get(credit.payment_id, Decimal(0)) + credit.amount
    postings, events = service.collections_due(
        facts, current_applications(state, finals), {}, credits=credits
    )
    return {
        "summaries": service.summary_rows(facts, on, state=state, finals=finals),
        "summaries_today": service.summary_rows(facts, on),
        "postings": postings,
        "events": events,
        "credits": state.credits,
        "refundable": [refundable_until(facts, p) for p in facts.payments],
        "latest": latest_fact_date(facts),
        "class": facts.lodging_class,
        "jurisdiction": facts.jurisdiction,
    }


async def accounts_of_every_kind(bus: Bus) -> list[str]:
    pr, vi, bare = new_account(), new_account("VI"), new_account()
    await bus.lodging(pr)
    first = await bus.declare(pr, "2025-01", room_revenue="10000.00", declared_total="850.00")
    await bus.declare(pr, "2025-01", room_revenue="3000.00", filer_kind="facilitator", filer_id="ota-1")
    await bus.declare(pr, "2025-02", room_revenue="10000.00", filed_on=date(2025, 4, 20))
    await bus.amend(first, room_revenue="12000.00", filed_on=date(2025, 4, 1))
    designated = await bus.pay(pr, "900.00", due("PR", "2025-01"), periods={"2025-01": "900.00"})
    for amount, on in (("5000.00", date(2025, 3, 20)), ("30000.00", date(2025, 6, 2))):  # then a credit
        await bus.pay(pr, amount, on)
    await bus.reverse(pr, designated, "300.00", date(2025, 5, 2))
    await bus.lodging(vi, jurisdiction="VI")
    no_books = {"room_revenue": Decimal("8000.00"), "room_nights": 100, "books_kept": False}
    await bus.declare(vi, "2025-01", jurisdiction="VI", lines=no_books)
    await bus.declare(
        vi, "2025-02", jurisdiction="VI", lodging_class="timeshare", timeshare_owner_unit_days=3
    )
    await bus.pay(vi, "200.00", date(2025, 3, 31), jurisdiction="VI")
    # no lodging registered: the class comes from the latest liability
    await bus.declare(bare, "2025-03", room_revenue="6000.00", lodging_class="inn", filed_on=date(2025, 5, 1))
    await bus.declare(bare, "2025-02", room_revenue="5000.00", lodging_class="hotel")
    await bus.pay(bare, "1000.00", date(2025, 5, 1))
    return [pr, vi, bare]


class TestRecomputeColumns:
    async def test_records_have_only_the_columns_read(self, bus: Bus, db: DB) -> None:
        [account, *_] = await accounts_of_every_kind(bus)
        async with db() as session:
            facts = (await repository.load_records_many(session, [account], columns="recompute"))[account]
            lean = (await repository.load_records_many(session, [account], columns="lean"))[account]
        assert set(facts.liabilities[0]._fields) == set(repository._RECOMPUTED[Liability])
        assert len(facts.liabilities[0]._fields) == 11
        assert {"trace", "input", "findings"} & set(lean.liabilities[0]._fields) == set()
        assert {"declared_total", "deficiency", "declaration_id"} <= set(lean.liabilities[0]._fields)
        assert len(facts.liabilities) == len(lean.liabilities) == 4

    async def test_the_recomputation_from_records_is_that_of_the_full_rows(self, bus: Bus, db: DB) -> None:
        accounts = await accounts_of_every_kind(bus)
        on = RUNTIME.today()
        async with db() as session:
            records = await repository.load_records_many(session, accounts, columns="recompute")
            models = await repository.load_facts_many(session, accounts, traces=True)
        assert sorted(records) == sorted(models) == sorted(accounts)
        for account in accounts:
            narrow, full = recomputed(records[account], on), recomputed(models[account], on)
            assert narrow == full, account
        pr, vi, bare = (recomputed(models[a], on) for a in accounts)
        assert [r["period"] for r in pr["summaries"]] == ["2025-01", "2025-02"]
        assert pr["credits"]  # the fixtures reach every part: a credit, postings of each account
        assert all(x["postings"] for x in (pr, vi, bare))
        assert bare["class"] == "inn"
