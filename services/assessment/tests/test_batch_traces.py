"""In a consumer's batch, every event continues the trace of the event that caused it.

The batch recomputes its accounts together at its end, inside the span of whichever event
asked first (``servicekit.consumer.once_per_batch``). A payment's ``collection.posted``
must still carry its own payment's trace (the one the payer's request started), not that
of another account's payment or return that happened to come first in the batch (a batch
is one partition's records: many accounts' payments, say); a posting no
payment event of the batch caused (an earlier payment's credit applied to a new return)
carries the trace of the account's event that caused the recomputation.
"""

from __future__ import annotations

import json
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
POSTED = "roomtax.assessment.collection.posted.v1"
ASSESSED = "roomtax.assessment.account.assessed.v1"


def trace(n: int) -> str:
    return f"{n:032x}"


def traced(event: CloudEvent, n: int) -> CloudEvent:
    return event.model_copy(update={"traceparent": f"00-{trace(n)}-{n:016x}-01"})


def declaration(account: str, period: str) -> CloudEvent:
    inp = DeclarationInput(
        jurisdiction="PR", lodging_class="hotel", period=period, room_revenue=Decimal("10000"), room_nights=50
    )
    res = compute_allowed(inp)
    d = due("PR", period)
    data: dict[str, Any] = dict(
        declaration_id=f"decl-{account}-{period}",
        filing_id=f"filing-{account}-{period}",
        version=1,
        supersedes=None,
        tax_account=account,
        lodging_id=f"lodging-{account}",
        jurisdiction="PR",
        lodging_class="hotel",
        period=period,
        filer_kind="operator",
        filer_id="op-1",
        filed_on=d.isoformat(),
        due_date=d.isoformat(),
        late=False,
        input=inp.model_dump(mode="json"),
        findings=[],
    )
    amounts = {"taxable_base": res.taxable_base, "tax": res.tax, "impact_fee": res.impact_fee}
    amounts |= {"total_due": res.total_due, "declared_tax": res.tax, "declared_total": res.total_due}
    data |= {name: str(amount) for name, amount in amounts.items()}
    return cloud_event(
        "roomtax.filing.declaration.filed.v1", data, key=account, event_id=f"ev-{account}-{period}"
    )


def payment(account: str, amount: str) -> CloudEvent:
    return cloud_event(
        "roomtax.filing.payment.received.v1",
        {
            "payment_id": f"pay-{account}",
            "tax_account": account,
            "jurisdiction": "PR",
            "amount": amount,
            "method": "ach",
            "received_on": "2025-02-10",
            "payer_kind": "operator",
            "payer_id": "op-1",
            "periods": [],
        },
        key=account,
        event_id=f"ev-pay-{account}",
    )


async def test_each_posting_continues_its_payments_trace_and_else_its_accounts() -> None:
    url = await fresh_database("roomtax_test_assessment_batch_traces", MIGRATIONS)
    engine = make_engine(url, application_name="batch-traces", pool_size=2)
    sm = make_sessionmaker(engine, service="assessment")
    registry, filing, _ = consumers(AssessmentSettings(environment="test", database_url=url), sm, RUNTIME)
    assert isinstance(filing, EventConsumer)
    filing.batch_size = 200
    filing.max_attempts = 1
    a, b = "PR-7200001-0", "PR-7200002-0"
    await registry.handle_records(consumer_records([lodging_event(a), lodging_event(b)]))
    # one batch: B's return asks first for the recompute of every account of the batch
    first = [
        traced(declaration(b, "2025-01"), 3),
        traced(declaration(a, "2025-01"), 1),
        traced(payment(b, "100.00"), 2),
        traced(payment(a, "5000.00"), 4),  # more than A's January: a credit
    ]
    await filing.handle_records(consumer_records(first))
    # another batch: A's February return takes the credit; no payment event in this batch
    await filing.handle_records(consumer_records([traced(declaration(a, "2025-02"), 5)]))
    try:
        async with sm() as s:
            rows = (
                await s.execute(text("SELECT event_type, payload, traceparent FROM outbox ORDER BY id"))
            ).all()
    finally:
        await engine.dispose()
    assert filing.batches == 1  # the first four in one transaction (the last alone)
    posted: list[tuple[str, str, str]] = []
    assessed: list[tuple[str, str, str]] = []
    for event_type, payload, traceparent in rows:
        data = (payload if isinstance(payload, dict) else json.loads(payload))["data"]
        trace_id = traceparent.split("-")[1]
        if event_type == POSTED:
            posted.append((data["payment_id"], data["period"], trace_id))
        elif event_type == ASSESSED:
            assessed.append((data["tax_account"], data["period"], trace_id))
    assert assessed == [(b, "2025-01", trace(3)), (a, "2025-01", trace(1)), (a, "2025-02", trace(5))]
    assert {p[0] for p in posted} == {f"pay-{a}", f"pay-{b}"}
    assert sorted({(pid, period, t) for pid, period, t in posted}) == [
        (f"pay-{a}", "2025-01", trace(4)),
        (f"pay-{a}", "2025-02", trace(5)),
        (f"pay-{b}", "2025-01", trace(2)),
    ]
