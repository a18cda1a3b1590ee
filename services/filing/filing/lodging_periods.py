"""A lodging-period, as declarations, payments, schedules and reports all name it.

The period parsed from the wire (a bad one is a 422 on its field), the stable id of
one filer's filing for a lodging-period, and the lodging as it was in the period.
"""

from __future__ import annotations

import uuid
from typing import Any

from filing.ids import name_id
from filing.models import Lodging
from servicekit.errors import ValidationFailed
from taxcore.events import registry as registry_events
from taxcore.periods import Period

_FILINGS = uuid.UUID("6f1c35a8-7c38-4d53-9a43-3f4a0b7c9e21")


def parse_period(text: str, *, field: str = "period", root: str = "body") -> Period:
    try:
        return Period.parse(text)
    except ValueError as exc:
        raise ValidationFailed.on(field, f"expected YYYY-MM, got {text!r}", root=root) from exc


def filing_id(lodging_id: str, period: Period, filer_kind: str, filer_id: str) -> str:
    """Stable id of one filer's filing for one lodging-period (every version shares it)."""
    return name_id(_FILINGS, f"{lodging_id}|{period}|{filer_kind}|{filer_id}")  # a uuid5


def lodging_ref(lodging: Lodging, period: Period) -> dict[str, Any]:
    """The lodging as it was in ``period`` (its class and casino licence then)."""
    in_force = registry_events.attributes_in(lodging, period)
    return {
        "lodging_id": lodging.lodging_id,
        "tax_account": lodging.tax_account,
        "jurisdiction": lodging.jurisdiction,
        "lodging_class": in_force.lodging_class,
        "casino": in_force.casino,
        "name": lodging.name,
    }
