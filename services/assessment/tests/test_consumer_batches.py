"""The filing consumer in batches has exactly the effects of one event per transaction.

The same events (many accounts interleaved, each account's in order: declarations and
amendments, several payments of one day with and without designations, a reversal, an
event delivered twice in one batch, one redelivered in a later batch, a declaration
version and a payment replayed under new event ids) go through the worker's real
consumers (``assessment.consumers``), ``handle_records`` as ``EventConsumer.run`` calls
it, into two fresh databases: one event per transaction, and batches of 200 (the batch's
accounts locked and its lookups fetched at once, every account recomputed together).
Liabilities, payments, what is posted (net per payment, period and component: one event
per transaction also posts the intermediate states), summaries and, per account in order,
the assessed events are the same.
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from assessment_factories import RUNTIME, cloud_event, due, lodging_event
from sqlalchemy import text

from assessment.consumers import consumers
from assessment.settings import AssessmentSettings
from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.testing import consumer_records, fresh_database
from taxcore.events import CloudEvent
from taxcore.rules.declaration import DeclarationInput, compute_allowed

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
ACCOUNTS = 12


def _declaration(
    account: str, period: str, n: int, version: int, rng: random.Random, *, filer: str = "operator"
) -> CloudEvent:
    inp = DeclarationInput(
        jurisdiction="PR",
        lodging_class="hotel",
        period=period,
        room_revenue=Decimal(rng.randrange(40_000, 44_000)),  # average daily rates close to their peers'
        room_nights=100,
    )
    res = compute_allowed(inp)
    d = due("PR", period)
    filed = d + timedelta(days=rng.randrange(-5, 40) + 20 * (version - 1))
    data = dict(
        declaration_id=f"decl-{account}-{n}-{version}",
        filing_id=f"filing-{account}-{n}",
        version=version,
        supersedes=f"decl-{account}-{n}-{version - 1}" if version > 1 else None,
        tax_account=account,
        lodging_id=f"lodging-{account}",
        jurisdiction="PR",
        lodging_class="hotel",
        period=period,
        filer_kind=filer,
        filer_id="op-1" if filer == "operator" else "fac-1",
        filed_on=filed.isoformat(),
        due_date=d.isoformat(),
        late=filed > d,
        input=inp.model_dump(mode="json"),
        findings=[],
    )
    amounts = {"taxable_base": res.taxable_base, "tax": res.tax, "impact_fee": res.impact_fee}
    amounts |= {"total_due": res.total_due, "declared_tax": res.tax}
    amounts["declared_total"] = res.total_due - (Decimal("10.00") if rng.random() < 0.3 else 0)
    data |= {name: str(amount) for name, amount in amounts.items()}
    etype = "roomtax.filing.declaration.filed.v1" if version == 1 else "roomtax.filing.declaration.amended.v1"
    return cloud_event(etype, data, key=account, event_id=f"ev-decl-{account}-{n}-{version}")


def _payment(account: str, k: int, on: date, rng: random.Random, periods: list[str]) -> CloudEvent:
    designated = [{"period": rng.choice(periods), "amount": "150.00"}] if rng.random() < 0.4 else []
    return cloud_event(
        "roomtax.filing.payment.received.v1",
        {
            "payment_id": f"pay-{account}-{k}",
            "tax_account": account,
            "jurisdiction": "PR",
            "amount": str(Decimal(rng.randrange(2_000, 90_000)) / 100),
            "method": "ach",
            "received_on": on.isoformat(),
            "payer_kind": "operator",
            "payer_id": "op-1",
            "periods": designated,
        },
        key=account,
        event_id=f"ev-pay-{account}-{k}",
    )


def account_events(j: int) -> tuple[CloudEvent, list[CloudEvent]]:
    rng = random.Random(j)
    account = f"PR-{j + 7_100_000:07d}-0"
    lodging = lodging_event(account)
    periods = ["2025-01", "2025-02", "2025-03"][: rng.randrange(1, 4)]
    events: list[CloudEvent] = []
    for n, period in enumerate(periods):
        events.append(_declaration(account, period, n, 1, rng))
    days = [date(2025, 2, 10) + timedelta(days=rng.randrange(0, 120)) for _ in range(2)]
    for k in range(rng.randrange(2, 7)):
        events.append(_payment(account, k, rng.choice(days), rng, periods))
    if rng.random() < 0.6:
        events.insert(rng.randrange(1, len(events) + 1), _declaration(account, periods[0], 0, 2, rng))
    if rng.random() < 0.7:  # an intermediary's row of a period, before or after the operator's return
        n = 10 + len(periods)
        events.insert(
            rng.randrange(0, len(events) + 1),
            _declaration(account, periods[-1], n, 1, rng, filer="facilitator"),
        )
    if rng.random() < 0.5:
        events.append(
            cloud_event(
                "roomtax.filing.payment.reversed.v1",
                {
                    "reversal_id": f"rev-{account}",
                    "payment_id": f"pay-{account}-0",
                    "tax_account": account,
                    "jurisdiction": "PR",
                    "amount": "20.00",
                    "reversed_on": (max(days) + timedelta(days=3)).isoformat(),
                    "reason": "dishonoured cheque",
                },
                key=account,
                event_id=f"ev-rev-{account}",
            )
        )
    events.insert(rng.randrange(1, len(events) + 1), events[0])  # delivered twice
    replay = events[1].model_copy(update={"id": f"ev-replay-{account}"})  # same fact, new event id
    events.append(replay)
    return lodging, events


def interleaved() -> tuple[list[CloudEvent], list[CloudEvent]]:
    """Lodgings, then every account's events interleaved (each account's in order)."""
    lodgings, streams = zip(*(account_events(j) for j in range(ACCOUNTS)), strict=True)
    rng = random.Random(99)
    queues = [list(s) for s in streams]
    out: list[CloudEvent] = []
    while any(queues):
        out.append(rng.choice([q for q in queues if q]).pop(0))
    return list(lodgings), out


async def consume(name: str, batch: int) -> dict[str, Any]:
    url = await fresh_database(f"roomtax_test_assessment_batches_{name}", MIGRATIONS)
    engine = make_engine(url, application_name=f"batches-{name}", pool_size=2)
    sm = make_sessionmaker(engine, service="assessment")
    settings = AssessmentSettings(environment="test", database_url=url)
    registry, filing, _ = consumers(settings, sm, RUNTIME)
    assert isinstance(filing, EventConsumer)
    filing.batch_size = batch
    filing.max_attempts = 1
    lodgings, events = interleaved()
    await registry.handle_records(consumer_records(lodgings))
    recs = consumer_records(events)
    cut = len(recs) * 2 // 3
    await filing.handle_records(recs[:cut])
    await filing.handle_records(recs[cut - 5 :])  # the last five redelivered
    try:
        async with sm() as s:

            async def rows(sql: str) -> list[tuple[Any, ...]]:
                return [tuple(r) for r in (await s.execute(text(sql))).all()]

            assessed: dict[str, list[Any]] = {}
            emitted: dict[str, list[Any]] = {}  # per key in order, but the postings (see "posted")
            for key, event_type, payload in await rows(
                "SELECT key, event_type, payload FROM outbox ORDER BY id"
            ):
                body = payload if isinstance(payload, dict) else json.loads(payload)
                if event_type == "roomtax.assessment.account.assessed.v1":
                    assessed.setdefault(key, []).append(body["data"])
                if event_type != "roomtax.assessment.collection.posted.v1":
                    data = {k: v for k, v in body["data"].items() if k != "run_id"}  # a serial
                    emitted.setdefault(key, []).append((event_type, data))
            posted_events = await rows(
                "SELECT count(*) FROM outbox WHERE event_type = 'roomtax.assessment.collection.posted.v1'"
            )
            posting_rows = await rows("SELECT count(*) FROM collection_postings")
            assert posted_events == posting_rows  # an event for every posting
            return {
                "counts": (filing.applied, filing.duplicates, filing.parked, filing.batches > 0),
                "liabilities": await rows(
                    "SELECT declaration_id, event_id, tax, impact_fee, deficiency, deficiency_reason, "
                    "books_kept, filed_on, filing_id, version, supersedes, filer_kind, taxable_base, "
                    "declared_tax, declared_total, input::text, findings::text, trace::text "
                    "FROM liabilities ORDER BY declaration_id"
                ),
                "crosschecks": await rows(
                    "SELECT tax_account, period, declaration_id, intermediaries_key, checked_on, findings "
                    "FROM crosscheck_runs ORDER BY 1, 2, 3, 4"
                ),
                "emitted": emitted,
                "payments": await rows(
                    "SELECT payment_id, amount, received_on, designations::text FROM payments ORDER BY 1"
                ),
                "reversals": await rows("SELECT reversal_id, amount FROM payment_reversals ORDER BY 1"),
                # one event per transaction posts each intermediate state (and its correction),
                # a batch the account's state after it: what is posted nets to the same
                "posted": await rows(
                    "SELECT payment_id, tax_account, period, component, sum(amount), min(collected_on), "
                    "max(section) FROM collection_postings GROUP BY 1, 2, 3, 4 HAVING sum(amount) <> 0 "
                    "ORDER BY 1, 2, 3, 4"
                ),
                "summaries": await rows(
                    "SELECT tax_account, period, basis, principal, total_assessed, total_paid, balance, "
                    "as_of FROM account_summaries ORDER BY 1, 2"
                ),
                "inbox": await rows("SELECT count(*) FROM inbox WHERE consumer = 'assessment-filing'"),
                "assessed": assessed,
            }
    finally:
        await engine.dispose()


async def test_batches_have_exactly_the_effects_of_one_event_per_transaction() -> None:
    one = await consume("one", 1)
    batched = await consume("many", 200)
    assert one["counts"][:3] == batched["counts"][:3]
    assert batched["counts"][3] is True
    assert one["counts"][3] is False
    applied, duplicates, parked, _ = one["counts"]
    _, events = interleaved()
    assert (applied, duplicates, parked) == (len({e.id for e in events}), len(events) - applied + 5, 0)
    names = ("liabilities", "payments", "reversals", "posted", "summaries", "inbox", "assessed")
    for name in (*names, "crosschecks", "emitted"):
        assert one[name] == batched[name], name
    assert len(one["posted"]) > 3 * ACCOUNTS  # the payments were allocated and posted
    assert len(one["assessed"]) == ACCOUNTS
    kinds = {r[11] for r in one["liabilities"]}
    assert kinds == {"operator", "facilitator"}  # intermediaries' rows too
    assert len(one["crosschecks"]) > ACCOUNTS  # operator returns were cross-checked, some with intermediaries
    assert any(r[3] for r in one["crosschecks"])
    # the replayed declaration and payment (new event ids, same facts) added nothing
    assert len(one["liabilities"]) == len({r[0] for r in one["liabilities"]})
