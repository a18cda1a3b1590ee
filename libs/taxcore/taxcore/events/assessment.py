"""Assessment events (payloads). Keyed by tax account number."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Literal

from taxcore.events import EventData, contract

ACCOUNTS = "assessment.accounts"
COLLECTIONS = "assessment.collections"
NOTICES = "assessment.notices"


@contract("roomtax.assessment.bond.draw.requested.v1", NOTICES)
class BondDrawRequested(EventData):
    """PR §33: a notice's term lapsed unpaid; draw the unpaid deficiency on the bond."""

    notice_id: str
    tax_account: str
    period: str
    amount: Decimal
    requested_on: date
    reason: str


Component = Literal["tax", "impact_fee", "penalty", "interest", "fine"]


@contract("roomtax.assessment.collection.posted.v1", COLLECTIONS)
class CollectionPosted(EventData):
    """Cents of a payment as assessment applied them (taxcore's application order).

    When a later event changes how a payment applies (an amendment, a reversal),
    assessment posts the *difference* (negative amounts allowed), so for every
    payment the sum of its postings equals what is currently applied of it.
    Distribution consumes this.
    """

    posting_id: str
    payment_id: str
    tax_account: str
    jurisdiction: str
    lodging_class: str
    period: str  # the tax period the cents were applied to
    component: Component
    amount: Decimal
    collected_on: date  # the payment's received date: distribution's month
    section: str
