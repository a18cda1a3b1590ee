"""The ledger's listings and a run's report, byte for byte, after a batch through the consumer.

Pinned before the batch write path changed (issue 12): the same events must give the same
entries, lines, balances and report, whatever the statements that book them. Ids the
database or the run chose are replaced by their order of appearance (``#1``, ``run-1``), so
the bytes do not depend on what other tests booked before.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import httpx
from distribution_factories import (
    AUDITOR,
    certify,
    collection_event,
    collection_record,
    collections_consumer,
    run,
)
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from taxcore.events import CloudEvent

GOLDEN = Path(__file__).parent / "golden" / "ledger_reports.txt"


def _events() -> list[CloudEvent]:
    out = []
    for i in range(12):
        jurisdiction = "VI" if i % 4 == 3 else "PR"
        event = collection_event(
            amount=(i - 2) * Decimal(137) + i * Decimal("0.05") if i != 5 else Decimal("0.00"),
            collected_on=date(2026, 7, 1 + i) if jurisdiction == "PR" else date(2026, 10, 1 + i),
            jurisdiction=jurisdiction,
            component="penalty" if i % 5 == 4 else "tax",
            posting_id=f"golden-p{i}",
            event_id=f"golden-e{i}",
            payment_id=f"golden-pay{i // 2}",
            refund_id="golden-r1" if i == 2 else None,
        )
        account = f"{jurisdiction}-G{i % 3}"  # a lodging with several collections
        out.append(
            event.model_copy(update={"subject": account, "data": {**event.data, "tax_account": account}})
        )
    return out


def _normalized(text: str) -> str:
    """Database and run ids replaced by their order of first appearance."""
    seen: dict[str, str] = {}

    def name(kind: str, value: str) -> str:
        return seen.setdefault(f"{kind}:{value}", f"{kind}-{sum(k.startswith(kind) for k in seen) + 1}")

    text = re.sub(
        r'"(id|reverses_entry_id|journal_entry_id)":(\d+)',
        lambda m: f'"{m[1]}":"{name("entry", m[2])}"',
        text,
    )
    text = re.sub(r'"next_cursor":"[^"]*"', '"next_cursor":"…"', text)
    return re.sub(r"\b[0-9a-f]{32}\b|\b[0-9a-f-]{36}\b", lambda m: name("run", m[0]), text)


class TestReportBytes:
    async def test_batch_then_run_reports_are_pinned(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        events = _events()
        consumer = collections_consumer(db)
        records = [collection_record(e, i) for i, e in enumerate(events)]
        await consumer.handle_records(records)
        assert (consumer.batches, consumer.applied, consumer.parked) == (1, 12, 0)
        await certify(client, 2027, "1200000.00")
        pr = await run(client, "PR", "2026-07")
        vi = await run(client, "VI", "2026-10")
        parts = []
        for path, params in [
            ("/v1/ledger/entries", {"limit": "100"}),
            ("/v1/ledger/entries", {"tax_account": "PR-G0"}),
            ("/v1/ledger/trial-balance", {}),
            ("/v1/ledger/trial-balance", {"jurisdiction": "PR", "as_of": "2026-07-05"}),
            ("/v1/funds", {"jurisdiction": "PR", "as_of": "2026-07-31"}),
            ("/v1/funds", {"jurisdiction": "VI", "as_of": "2026-10-31"}),
            (f"/v1/runs/{pr['id']}/report.csv", {}),
            (f"/v1/runs/{vi['id']}/report.csv", {}),
        ]:
            r = await client.get(path, params=params, headers=AUDITOR)
            assert r.status_code == 200, r.text
            parts.append(f"GET {path} {sorted(params.items())}\n{r.text}")
        got = _normalized("\n".join(parts))
        assert got == GOLDEN.read_text()
