"""Randomized (fixed seeds): after any sequence of collections and runs the ledger balances and
funds + pending == collected, to the cent.

Collections include give-backs: a paid refund of money already collected (and perhaps
distributed) arrives as assessment sends it -- a negative collection of the same payment and
component, dated the payment's day (so a late arrival for a month perhaps closed), naming the
refund -- and the next run gives the shares back by the same rule. Returned-payment fees are
accessory receipts (other receipts). At the end every give-back was taken by exactly one run
or is still pending, and the journal says which refund each one was."""

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
    # refundable collections: (component, amount, payment, collected on)
    given: dict[str, list[tuple[str, Decimal, str, date]]] = {"PR": [], "VI": []}
    refunds: list[str] = []
    for step in range(60):
        j = rng.choice(["PR", "VI"])
        if given[j] and rng.random() < 0.15:
            # a paid refund of part of an earlier collection, as assessment posts it
            component, was, payment, day = given[j].pop(rng.randrange(len(given[j])))
            back = -(was * Decimal(rng.randint(1, 100)) / 100).quantize(Decimal("0.01"))
            if back != 0:
                refunds.append(f"refund-{seed}-{step}")
                await collect(
                    db,
                    jurisdiction=j,
                    component=component,
                    amount=back,
                    collected_on=day,
                    payment_id=payment,
                    refund_id=refunds[-1],
                )
                collected[j] += back
        elif rng.random() < 0.7:
            month = next_month[j].add_months(rng.randint(-3, 1))
            day = date(month.year, month.month, rng.randint(1, 28))
            cents = rng.randint(-50_000, 5_000_000) if rng.random() < 0.15 else rng.randint(1, 9_000_000)
            amount = Decimal(cents) / 100
            if amount == 0:
                continue
            component = rng.choice(COMPONENTS[j])
            payment = f"payment-{seed}-{step}"
            await collect(
                db, jurisdiction=j, component=component, amount=amount, collected_on=day, payment_id=payment
            )
            collected[j] += amount
            if amount > 0:
                given[j].append((component, amount, payment, day))
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
    assert refunds, "the sequence paid refunds"
    for refund in refunds:
        runs = await scalar(
            db,
            "SELECT count(rc.run_id) FROM collections c JOIN journal_entries e ON e.id = c.entry_id "
            "LEFT JOIN run_collections rc ON rc.collection_id = c.id "
            "WHERE e.description LIKE :d AND c.amount < 0",
            d=f"%(give-back of refund {refund})",
        )
        assert runs in (0, 1)  # distributed once, or still pending (netted by a later run)
        assert (
            await scalar(
                db,
                "SELECT count(*) FROM journal_entries WHERE description LIKE :d",
                d=f"%(give-back of refund {refund})",
            )
            == 1
        )
