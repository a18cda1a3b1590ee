"""The plain lines of a monthly return as the services' APIs take them.

The money lines (:data:`taxcore.rules.declaration.LINES`), the counts and whether the
tax was itemized: the fields :class:`~taxcore.rules.declaration.DeclarationInput` takes
besides comp rooms, exemptions and the books, bounded for the wire. A return, a filing
schedule's row and an audit's corrected base are these lines and more.

Pydantic orders a model's fields base by base, the last base first: a model that puts
its own fields between the money lines and the counts lists ``CountLines`` first among
its bases and ``MoneyLines`` last.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.money import Money


class MoneyLines(BaseModel):
    model_config = ConfigDict(extra="forbid")
    room_revenue: Money = Decimal(0)
    paid_unused_rooms: Money = Decimal(0)
    room_penalties: Money = Decimal(0)
    resort_and_other_fees: Money = Decimal(0)
    surcharges_and_service_charges: Money = Decimal(0)
    intermediary_retained: Money = Decimal(0)
    all_inclusive_global_charges: Money = Decimal(0)


class CountLines(BaseModel):
    model_config = ConfigDict(extra="forbid")
    room_nights: int = Field(default=0, ge=0, le=100_000_000)
    timeshare_owner_unit_days: int = Field(default=0, ge=0, le=100_000_000)
    tax_itemized: bool = True


class ReturnLines(CountLines, MoneyLines):
    """The money lines, then the counts."""
