"""Distribution events (payloads). Keyed by jurisdiction, so one jurisdiction's runs stay in order."""

from __future__ import annotations

from datetime import date, datetime

from taxcore.events import EventData, contract
from taxcore.money import SignedMoney

RUNS = "distribution.runs"


class RunAllocation(EventData):
    """Money of one run credited to one fund (or other account), by one rule."""

    fund: str
    amount: SignedMoney
    rule: str
    section: str


@contract("roomtax.distribution.run.posted.v1", RUNS)
class RunPosted(EventData):
    """A monthly distribution run was posted to the ledger (PR §31; 33 V.I.C. §54(e), (b)(3)(D)).

    ``collected`` is what the run distributed (the month's collections, late
    arrivals for closed months and, in PR, collections released from earlier
    uncertified months); ``sum(allocations) + pending == collected``.
    """

    run_id: str
    jurisdiction: str
    month: str
    fiscal_year: int
    collected: SignedMoney
    collected_in_month: SignedMoney
    released: SignedMoney
    pending: SignedMoney
    allocations: list[RunAllocation]
    collections: int
    journal_entry_id: int | None
    posted_at: datetime
    closed_through: date
