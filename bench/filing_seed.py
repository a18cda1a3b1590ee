"""The filing projection's lodgings, seeded straight into a bench database (COPY), as the
registry's events would leave them: active, PR hotels, one attribute history entry each."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime

import asyncpg

COLUMNS = [
    "lodging_id",
    "tax_account",
    "jurisdiction",
    "lodging_class",
    "casino",
    "name",
    "municipality",
    "operator_id",
    "registered_on",
    "statuses",
    "attributes",
    "as_of",
]


async def seed_lodgings(
    conn: asyncpg.Connection, accounts: Sequence[str], *, operator: str, registered_on: date
) -> None:
    """Lodging ``lodging-<i>`` per account, an active hotel from ``registered_on``."""
    since = registered_on.isoformat()
    statuses = json.dumps([{"status": "active", "effective_from": since}])
    attributes = json.dumps([{"effective_from": since, "lodging_class": "hotel", "casino": False}])
    now = datetime.now(UTC)
    await conn.copy_records_to_table(
        "lodgings",
        columns=COLUMNS,
        records=[
            (
                f"lodging-{i}",
                acct,
                "PR",
                "hotel",
                False,
                f"Hotel {i}",
                "San Juan",
                operator,
                registered_on,
                statuses,
                attributes,
                now,
            )
            for i, acct in enumerate(accounts)
        ],
    )
