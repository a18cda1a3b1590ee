"""Randomized (fixed seeds): after any sequence of collections and runs the ledger balances and
funds + pending == collected, to the cent.

Collections include give-backs: a refund of money already collected (and perhaps distributed)
arrives as a negative collection of the same component, later; the next run gives the shares
back by the same rule. Returned-payment fees are accessory receipts (other receipts)."""

from __future__ import annotations

import random
from datetime import date
from decimal import Decimal

import httpx
import pytest
from distribution_factories import ADMIN, AUDITOR, certify, collect, scalar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from taxcore.periods import Period

COMPONENTS = {
    "PR": ["tax", "tax", "tax", "penalty", "interest", "fine", "impact_fee", "returned_payment_fee"],
    "VI": ["tax", "tax", "impact_fee", "penalty", "interest", "returned_payment_fee"],
}
START = {"PR": Period(2026, 7), "VI": Period(2026, 10)}


async def _check(
    client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession], j: str, collected: Decimal
) -> None:
    funds = (
        await client.get("/v1/funds", params={"jurisdiction": j, "as_of": "2099-12-31"}, headers=AUDITOR)
    ).json()
    assert Decimal(funds["collected"]) == collected
    assert Decimal(funds["distributed"]) + Decimal(funds["pending"]) == collected
    assert funds["conserved"] is True
    tb = (await client.get("/v1/ledger/trial-balance", headers=AUDITOR)).json()
    assert tb["balanced"] is True
    unbalanced = await scalar(
        db,
        "SELECT count(*) FROM (SELECT entry_id FROM journal_lines GROUP BY entry_id "
        "HAVING sum(amount) <> 0) AS u",
    )
    assert unbalanced == 0


@pytest.mark.parametrize("seed", [7, 2027, 31415])
async def test_random_sequences_conserve_money(
    client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession], seed: int
) -> None:
    rng = random.Random(seed)
    collected = {"PR": Decimal("0.00"), "VI": Decimal("0.00")}
    next_month = dict(START)
    certified = rng.random() < 0.5
    if certified:
        await certify(client, 2027, f"{rng.randint(100_000, 3_000_000)}.{rng.randint(0, 99):02d}")
    given: dict[str, list[tuple[str, Decimal]]] = {"PR": [], "VI": []}  # refundable collections
    for step in range(60):
        j = rng.choice(["PR", "VI"])
        if given[j] and rng.random() < 0.1:
            # a paid refund of part of an earlier collection: a negative collection this month
            component, was = given[j].pop(rng.randrange(len(given[j])))
            back = -(was * Decimal(rng.randint(1, 100)) / 100).quantize(Decimal("0.01"))
            if back != 0:
                month = next_month[j]
                day = date(month.year, month.month, rng.randint(1, 28))
                await collect(db, jurisdiction=j, component=component, amount=back, collected_on=day)
                collected[j] += back
        elif rng.random() < 0.7:
            month = next_month[j].add_months(rng.randint(-3, 1))
            day = date(month.year, month.month, rng.randint(1, 28))
            cents = rng.randint(-50_000, 5_000_000) if rng.random() < 0.15 else rng.randint(1, 9_000_000)
            amount = Decimal(cents) / 100
            if amount == 0:
                continue
            component = rng.choice(COMPONENTS[j])
            await collect(db, jurisdiction=j, component=component, amount=amount, collected_on=day)
            collected[j] += amount
            if amount > 0:
                given[j].append((component, amount))
        else:
            if j == "PR" and not certified and step > 30:
                await certify(client, 2027, "900000.00")
                certified = True
            r = await client.post(
                "/v1/runs",
                json={"jurisdiction": j, "month": str(next_month[j]), "preview": rng.random() < 0.2},
                headers=ADMIN,
            )
            assert r.status_code in (200, 201), r.text
            body = r.json()
            total = sum((Decimal(a["amount"]) for a in body["allocations"]), Decimal(0))
            assert total + Decimal(body["pending"]) == Decimal(body["collected"])
            if body["status"] == "posted":
                next_month[j] = next_month[j].next()
        await _check(client, db, j, collected[j])
    for j in ("PR", "VI"):
        await _check(client, db, j, collected[j])
        assert next_month[j] > START[j].add_months(2), "the sequence posted runs"
