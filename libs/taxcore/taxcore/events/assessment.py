"""Assessment events (payloads). Keyed by tax account number."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Literal

from taxcore.events import EventData, contract
from taxcore.money import Money, SignedMoney

ACCOUNTS = "assessment.accounts"
COLLECTIONS = "assessment.collections"
NOTICES = "assessment.notices"


@contract("roomtax.assessment.bond.draw.requested.v1", NOTICES)
class BondDrawRequested(EventData):
    """PR §33: a notice's term lapsed unpaid; draw the unpaid deficiency on the bond."""

    notice_id: str
    tax_account: str
    period: str
    amount: Money
    requested_on: date
    reason: str


Component = Literal["tax", "impact_fee", "penalty", "interest", "fine", "returned_payment_fee"]


@contract("roomtax.assessment.collection.posted.v1", COLLECTIONS)
class CollectionPosted(EventData):
    """Cents of a payment as assessment applied them (taxcore's application order).

    When a later event changes how a payment applies (an amendment, a reversal,
    a decision), assessment posts the *difference* (negative amounts allowed), so
    for every payment the sum of its postings equals what is currently applied of
    it plus what of it is *held*: money once applied that a restatement turned into
    the account's credit stays with the funds while the agency holds it (it may pay
    a later period), and is given back only when it leaves -- a paid refund
    (``refund_id`` names it; the funds give their shares back in distribution's next
    run, by the same rule) or a reversal. Distribution consumes this.
    """

    posting_id: str
    payment_id: str
    tax_account: str
    jurisdiction: str
    lodging_class: str
    period: str  # the tax period the cents were applied to
    component: Component
    amount: SignedMoney
    collected_on: date  # the payment's received date: distribution's month
    section: str
    refund_id: str | None = None  # a give-back: the paid refund that took this money out


@contract("roomtax.assessment.account.assessed.v1", ACCOUNTS)
class AccountAssessed(EventData):
    """The liability of one account (lodging, period) was set or changed.

    ``basis`` says where it comes from: a declaration version recomputed by
    taxcore (the filer's figure is ``declared_total``; the difference is the
    ``deficiency``, with its ``reasons``), or an estimated assessment of a
    non-filer (PR §32; VI §54(d)), which a later declaration supersedes.
    ``tax`` and ``impact_fee`` are the period's liability after this change
    (the sum over filers of their latest versions).
    """

    tax_account: str
    jurisdiction: str
    lodging_class: str
    period: str
    basis: Literal["declaration", "estimate"]
    source_id: str  # declaration_id or estimate id
    due_date: date
    assessed_on: date
    tax: Money
    impact_fee: Money
    declared_total: Money | None = None
    deficiency: SignedMoney = Decimal("0.00")
    reasons: list[str] = []
    section: str


@contract("roomtax.assessment.notice.issued.v1", NOTICES)
class NoticeIssued(EventData):
    """A Notification of a Deficiency (PR §2(25), §33) with the amounts owed on its date."""

    notice_id: str
    tax_account: str
    jurisdiction: str
    period: str
    kind: Literal["deficiency", "clerical_error"]
    reason: str
    issued_on: date
    response_deadline: date
    tax: Money
    impact_fee: Money
    penalty: Money
    interest: Money
    fine: Money
    total: Money
    section: str
