"""Filing events: declarations (and their amendments) and payments.

Keyed by tax account number. A lodging-period may have several *filings*, one
per filer (its operator, and each facilitator that remits for part of its
bookings); each filing is a chain of versions, an amendment superseding the
previous version of the same filer's filing. A lodging-period's liability is
the sum over filers of their latest versions.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from taxcore.events import EventData, contract
from taxcore.money import Money, SignedMoney

DECLARATIONS = "filing.declarations"
PAYMENTS = "filing.payments"

FilerKind = Literal["operator", "facilitator", "agency"]


class Finding(EventData):
    code: str
    line: str
    message: str
    declared: SignedMoney | None = None
    computed: SignedMoney | None = None
    section: str


@contract("roomtax.filing.declaration.filed.v1", DECLARATIONS)
class DeclarationFiled(EventData):
    declaration_id: str
    filing_id: str  # stable across versions of one filer's filing for one lodging-period
    version: int  # 1 for the original, 2.. for amendments
    supersedes: str | None  # declaration_id of the previous version
    tax_account: str
    lodging_id: str
    jurisdiction: str
    lodging_class: str
    period: str  # "2026-10"
    filer_kind: FilerKind
    filer_id: str
    schedule_id: str | None = None
    filed_on: date  # date received by the agency
    due_date: date
    late: bool
    books_kept: bool = True
    input: dict[str, Any]  # the taxcore DeclarationInput, so consumers can recompute
    taxable_base: Money  # taxcore's figures
    tax: Money
    impact_fee: Money
    total_due: Money
    declared_tax: Money | None  # the filer's own figures
    declared_total: Money | None
    findings: list[Finding] = []


@contract("roomtax.filing.declaration.amended.v1", DECLARATIONS)
class DeclarationAmended(DeclarationFiled):
    pass


class PeriodAmount(EventData):
    period: str
    amount: Money


@contract("roomtax.filing.payment.received.v1", PAYMENTS)
class PaymentReceived(EventData):
    """One payment for one tax account; ``periods`` says what the payer designated it for,
    the rest (``amount - sum(periods)``) is left to assessment's application order."""

    payment_id: str
    tax_account: str
    jurisdiction: str
    amount: Money
    method: str
    received_on: date
    payer_kind: FilerKind
    payer_id: str
    periods: list[PeriodAmount] = []


@contract("roomtax.filing.payment.reversed.v1", PAYMENTS)
class PaymentReversed(EventData):
    """A payment undone (bounced check): a new record referencing the original."""

    reversal_id: str
    payment_id: str
    tax_account: str
    jurisdiction: str
    amount: Money
    reversed_on: date
    reason: str
