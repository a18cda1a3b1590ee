"""The account ledger: from append-only facts to balances, for any date.

One *account* is one lodging and one monthly period. Its facts are the
liabilities (one row per version of each filer's declaration), an estimated
assessment when nothing was filed, the payments and reversals of the tax
account, the deficiency notices and the refunds. Nothing here reads the
database: :func:`account_state` and :func:`statement` are pure functions of the
facts and a date, so a statement for a past date only depends on the facts
dated on or before it and is the same whenever it is computed.

What is known on a date ``D`` (the *fact dates*): a declaration version from its
``filed_on``, an estimate from its ``raised_on``, a payment from ``received_on``,
a reversal from ``reversed_on`` (taxcore: a reversed payment counts as never
received), a notice from ``issued_on``, a refund from the day it was paid out (a
refund requested or approved but not paid leaves the credit in the account), an
adjustment fact (case work) from its ``effective_on`` and a write-off's
reversal from its ``reversed_on``.

Adjustment facts go to taxcore with the period (``AccountHistory.adjustments``).
A decision (reduce, cancel) known on ``D`` restates the liability from the due
date, like an amendment: when payments are allocated across periods, what a
period owed on a payment's day already counts the decisions known on ``D``.
Abatements, write-offs and fees act from their own day only.

The declaration of a period counts as filed (PR §47 fine stops, the account can
settle) on the earliest filing by a filer whose return meets the lodging's own
obligation (``taxcore.obligations.declaration_filed_on``: the operator, directly or
through the agency on its behalf); an intermediary's schedule adds its tax to the
liability but does not file the operator's declaration.

Liability of a period as known on ``D``: the sum over filers of the latest
version of their filing filed on or before ``D``, as recomputed by taxcore; if
none, the estimated assessment raised on or before ``D``; the estimate is then
*superseded*, never deleted. The liability is owed from the period's due date
whatever day it became known (taxcore runs penalties from the due date).

Application of payments across periods (taxcore applies within one period;
the order across periods is this service's documented reading):

1. Payments are taken in the order received (ties by payment id).
2. The amounts a payer designated for periods go to those periods, each up to
   what the period owes on the day the money was received.
3. The rest (undesignated money, and any designation above what its period
   owed) pays the periods oldest first, each up to what it owes that day --
   including periods not yet due, which is how a credit pays later periods.
   Within a period taxcore applies it in ``payments.application_order``.
4. What is left after every known period is paid is the account's *credit*:
   it is refundable within PR §42 (``law.py``) and pays periods that become
   known later (their liabilities are owed from their due dates, so the money
   already held pays them from the day it was received).

Because the liabilities used are those known on ``D``, a later amendment or a
declaration superseding an estimate re-routes earlier payments; the
collection postings then carry the difference (``accounts/service.py: post_collections``).

Known limit: a charge that arises on a period already paid in full (a PR §47 fine
on a period assessed by estimate while no declaration is filed, a returned-payment
fee, a VI §54(l) fine assessed after the due date) is not paid from a credit held
before it arose; both show on the statement. Money received after it pays it
(steps 2-3: a period is skipped as paid only when nothing can arise on it later,
:func:`settles`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import taxcore
from assessment import law
from assessment.casework.models import AdjustmentFact, AdjustmentReversal, RefundStep
from assessment.models import (
    Estimate,
    Liability,
    LodgingView,
    Notice,
    Payment,
    PaymentReversal,
    Refund,
)
from taxcore import obligations
from taxcore.events import registry as registry_events
from taxcore.money import ZERO
from taxcore.parameters import ParameterTree
from taxcore.periods import Period
from taxcore.periods import due_date as period_due_date
from taxcore.rules.balance import (
    AccountHistory,
    AdjustmentIn,
    Balance,
    PaymentIn,
    add_months,
    compute_balance,
)

Basis = Literal["declaration", "estimate"]

BALANCE_CACHE_SIZE = 4096
#: digests kept (:meth:`BalanceCache.digest`): a summary refresh takes one of every open period
#: of the account, and a worker's batch refreshes hundreds of long accounts (a key and its
#: digest: about 1 KB)
DIGEST_CACHE_SIZE = 65536
_HISTORY_FIELDS = tuple(AccountHistory.model_fields)
_PAYMENT_FIELDS = tuple(PaymentIn.model_fields)
_ADJUSTMENT_FIELDS = tuple(AdjustmentIn.model_fields)
_DECISIONS = ("reduce", "cancel")


def _key_part(value: object) -> object:
    # Decimal("1.0") == Decimal("1.00"), but taxcore may keep the exponent: key on the text.
    return ("D", str(value)) if isinstance(value, Decimal) else value


def _history_key(history: AccountHistory, as_of: date) -> tuple[object, ...]:
    parts: list[object] = [as_of]
    for name in _HISTORY_FIELDS:
        value = getattr(history, name)
        if name == "payments":
            parts.append(tuple(tuple(_key_part(getattr(p, f)) for f in _PAYMENT_FIELDS) for p in value))
        elif name == "adjustments":
            parts.append(tuple(tuple(_key_part(getattr(a, f)) for f in _ADJUSTMENT_FIELDS) for a in value))
        else:
            parts.append(_key_part(value))
    return tuple(parts)


Pieces = dict[str, tuple[date, Decimal]]  # piece id -> (received, amount)


def _basis_key(
    basis: PeriodBasis, jurisdiction: str, pieces: Pieces, as_of: date
) -> tuple[object, ...] | None:
    """Everything :meth:`PeriodBasis.history` (no ``decided_by``) reads, and the date; amounts as
    text (``_key_part``). None with adjustments (rare: the period's digest is not memoized)."""
    if basis.adjustments:
        return None
    return (
        as_of,
        jurisdiction,
        basis.period,
        basis.due_date,
        str(basis.tax),
        str(basis.impact_fee),
        basis.declaration_filed_on,
        basis.books_kept,
        basis.notice_on,
        tuple((piece, on, str(amount)) for piece, (on, amount) in pieces.items()) if pieces else (),
    )


class BalanceCache:
    """taxcore balances already computed, by period history and date (least recently used
       dropped past ``size``).

       A balance depends only on the history, the date and the law (``law``: the parameter
       tree of the owner's runtime, :mod:`servicekit.runtime`; the facts loaded with the cache
       read their law from it, :attr:`Facts.law`), so a period an event did not change is not
       walked again by the next event of the same account.
    One is owned by the assessment worker and one by its API app
       (kept with their sessionmakers: ``accounts.repository.attach``) and reaches the ledger through the
       account's :class:`Facts`; facts made without one get their own, which memoizes the
       walks of one computation. Returned balances are shared: callers must not modify them.
    """

    def __init__(self, *, law: ParameterTree, size: int = BALANCE_CACHE_SIZE) -> None:
        self.law = law
        self.size = size
        self._balances: OrderedDict[tuple[object, ...], Balance] = OrderedDict()
        #: digests already computed, by the same key (the oldest dropped past ``digests``)
        self._digests: dict[tuple[object, ...], bytes] = {}
        self.digests = DIGEST_CACHE_SIZE
        self._lock = threading.Lock()  # a request may compute from a worker thread

    def balance(self, history: AccountHistory, as_of: date) -> Balance:
        """taxcore's ``compute_balance(history, as_of=as_of, explain=False)``, memoized."""
        tree = self.law
        key = _history_key(history, as_of)
        with self._lock:
            found = self._balances.get(key)
            if found is not None:
                self._balances.move_to_end(key)
                return found
        result = compute_balance(history, as_of=as_of, parameters=tree, explain=False)
        with self._lock:
            self._balances[key] = result
            if len(self._balances) > self.size:
                self._balances.popitem(last=False)
        return result

    def digest(self, history: AccountHistory, as_of: date) -> bytes:
        """What :meth:`balance` of ``history`` on ``as_of`` is computed from, as 16 bytes: the
        memo's key (every field of the history, and the date) with the law's and taxcore's
        :func:`balance_fingerprint`. Equal digests, equal balances: a stored figure computed
        from the same digest is the balance, without walking the period again."""
        h = hashlib.blake2b(balance_fingerprint(self.law), digest_size=16)
        h.update(repr(_history_key(history, as_of)).encode())
        return h.digest()

    def period_digest(self, basis: PeriodBasis, jurisdiction: str, pieces: Pieces, as_of: date) -> bytes:
        """:meth:`digest` of the period's history (:meth:`PeriodBasis.history`, no ``decided_by``)
        on ``as_of``, memoized by what the history is made of: a summary refresh takes the digest
        of every open period of an account, which an event changes one or two of, and building
        the history and its key was a third of a long account's recomputation."""
        key = _basis_key(basis, jurisdiction, pieces, as_of)
        found = self._digests.get(key) if key is not None else None
        if found is None:
            found = self.digest(basis.history(jurisdiction, pieces), as_of)
            if key is not None:
                with self._lock:
                    self._digests[key] = found
                    if len(self._digests) > self.digests:  # the oldest first
                        self._digests.pop(next(iter(self._digests)), None)
        return found

    def clear(self) -> None:
        """Forget every memoized balance (benchmarks measure the cold cost with it)."""
        with self._lock:
            self._balances.clear()
            self._digests.clear()

    def __len__(self) -> int:
        return len(self._balances)


_FINGERPRINT = ("assessment.accounts.ledger", "balance_fingerprint")
#: bump when what a summary row keeps of a balance (``service.summary_rows``) is computed otherwise
SUMMARY_FIGURES_VERSION = b"summary-figures-1"


def balance_fingerprint(tree: ParameterTree) -> bytes:
    """What a balance depends on besides its history and date: every parameter of ``tree``
    (its values, dates and citations) and taxcore's code (the source of the package, whose
    ``compute_balance`` walks the period), with :data:`SUMMARY_FIGURES_VERSION`. A new law
    or a new taxcore gives another fingerprint, so nothing computed before it is reused.
    Computed once per tree (``tree.memo``)."""
    found = tree.memo.get(_FINGERPRINT)
    if found is None:
        h = hashlib.blake2b(SUMMARY_FIGURES_VERSION, digest_size=16)
        for jurisdiction in tree.jurisdictions():
            for path in tree.paths(jurisdiction):
                h.update(repr(tree.parameter(jurisdiction, path)).encode())
        package = Path(taxcore.__file__).parent
        for source in sorted(package.rglob("*.py")):
            h.update(str(source.relative_to(package)).encode())
            h.update(source.read_bytes())
        found = tree.memo[_FINGERPRINT] = h.digest()
    assert isinstance(found, bytes)
    return found


@dataclass
class Facts:
    """Every fact of one tax account, loaded once."""

    tax_account: str
    jurisdiction: str
    lodging: LodgingView | None = None
    liabilities: list[Liability] = field(default_factory=list)
    estimates: list[Estimate] = field(default_factory=list)
    payments: list[Payment] = field(default_factory=list)
    reversals: list[PaymentReversal] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    refunds: list[Refund] = field(default_factory=list)
    adjustments: list[AdjustmentFact] = field(default_factory=list)
    adjustment_reversals: list[AdjustmentReversal] = field(default_factory=list)
    refund_steps: list[RefundStep] = field(default_factory=list)
    #: the balances already computed (of the worker or app that loaded the facts), and their law
    balances: BalanceCache = field(kw_only=True, repr=False, compare=False)

    @property
    def law(self) -> ParameterTree:
        """The parameter tree the account is computed with (its balance cache's)."""
        return self.balances.law

    def refund_paid_on(self) -> dict[str, date]:
        """Refund id -> the day it was paid out (only a paid refund leaves the account)."""
        return {s.refund_id: s.on for s in self.refund_steps if s.step == "paid"}

    def class_in(self, period: str) -> str:
        """The lodging's class in force in ``period`` (PR §2(16)), else :attr:`lodging_class`."""
        if self.lodging is not None:
            return registry_events.attributes_in(self.lodging, Period.parse(period)).lodging_class
        return self.lodging_class

    @property
    def lodging_class(self) -> str:
        if self.lodging is not None:
            return self.lodging.lodging_class
        for row in sorted(self.liabilities, key=lambda r: r.filed_on, reverse=True):
            return row.lodging_class
        for est in self.estimates:
            return est.lodging_class
        return "unknown"


def _known(on: date, as_of: date | None) -> bool:
    return as_of is None or on <= as_of


@dataclass
class PeriodBasis:
    """A period's liability as known on the statement date."""

    period: str
    due_date: date
    basis: Basis
    tax: Decimal
    impact_fee: Decimal
    declaration_filed_on: date | None
    books_kept: bool
    notice_on: date | None
    filings: list[Liability]
    estimate: Estimate | None
    superseded_estimate: Estimate | None
    adjustments: list[AdjustmentIn] = field(default_factory=list)

    @property
    def deficiency(self) -> Decimal:
        return sum((f.deficiency for f in self.filings), ZERO)

    def history(
        self,
        jurisdiction: str,
        pieces: dict[str, tuple[date, Decimal]],
        *,
        decided_by: date | None = None,
    ) -> AccountHistory:
        """taxcore's input; ``decided_by``: the decisions known count from that day already
        (what the period owed on a payment's day, as known on the statement date)."""
        adjustments = self.adjustments
        if decided_by is not None:
            adjustments = [
                a.model_copy(update={"effective_on": min(a.effective_on, decided_by)})
                if a.kind in _DECISIONS
                else a
                for a in adjustments
            ]
        return AccountHistory(
            jurisdiction=jurisdiction,
            period=self.period,
            due_date=self.due_date,
            tax=self.tax,
            impact_fee=self.impact_fee,
            declaration_filed_on=self.declaration_filed_on,
            books_kept=self.books_kept,
            deficiency_assessed_on=self.notice_on,
            payments=[
                PaymentIn(payment_id=pid, received_on=on, amount=amount)
                for pid, (on, amount) in pieces.items()
            ],
            adjustments=adjustments,
        )


@dataclass(frozen=True)
class Piece:
    """What remains in force of a payment on the statement date."""

    piece_id: str
    payment: Payment
    amount: Decimal
    reversed_on: date | None


@dataclass
class Credit:
    """Money of a payment left after every known period was paid (PR §42 refundable)."""

    payment_id: str
    received_on: date
    amount: Decimal
    refundable_until: date
    section: str


@dataclass
class AccountState:
    as_of: date | None
    jurisdiction: str
    periods: dict[str, PeriodBasis]
    pieces: dict[str, dict[str, tuple[date, Decimal]]]  # period -> piece id -> (received, amount)
    piece_payment: dict[str, str]
    credits: list[Credit]
    refunded: Decimal
    refund_shortfall: Decimal
    balances: BalanceCache = field(kw_only=True, repr=False, compare=False)

    @property
    def credit(self) -> Decimal:
        return sum((c.amount for c in self.credits), ZERO)

    def history(self, period: str, *, decided_by: date | None = None) -> AccountHistory:
        return self.periods[period].history(
            self.jurisdiction, self.pieces.get(period, {}), decided_by=decided_by
        )

    def digest(self, period: str, as_of: date) -> bytes:
        """The balance digest of :meth:`history` of ``period`` on ``as_of``
        (:meth:`BalanceCache.period_digest`)."""
        return self.balances.period_digest(
            self.periods[period], self.jurisdiction, self.pieces.get(period, {}), as_of
        )


def _written(row: AdjustmentFact) -> tuple[date, bool, int]:
    """Same-day facts in the order written (a row not yet flushed has no ``seq``: the newest)."""
    return (row.effective_on, row.seq is None, row.seq or 0)


def adjustments_known(facts: Facts, as_of: date | None) -> dict[str, list[AdjustmentIn]]:
    """Each period's adjustment facts in force on ``as_of`` (None: every fact), for taxcore."""
    reversed_on = {
        r.fact_id: r.reversed_on for r in facts.adjustment_reversals if _known(r.reversed_on, as_of)
    }
    out: dict[str, list[AdjustmentIn]] = defaultdict(list)
    for row in sorted(facts.adjustments, key=_written):
        if not _known(row.effective_on, as_of):
            continue
        out[row.period].append(
            AdjustmentIn(
                fact_id=row.id,
                kind=row.kind,
                effective_on=row.effective_on,
                component=row.component,
                amount=row.amount,
                reversed_on=reversed_on.get(row.id),
                section=row.section,
                reason=row.reason,
                approved_by=row.approved_by,
                proposed_by=row.proposed_by,
            )
        )
    return dict(out)


_PERIOD_LAW = "assessment.accounts.ledger.period_law"


def _period_law(tree: ParameterTree, jurisdiction: str, period: str) -> tuple[date, frozenset[str]]:
    """The period's due date and the filer kinds whose return meets its declaration obligation
    (``taxcore.obligations.declaration_filers``), memoized per tree (``tree.memo``): a long
    account asks for them for each of its periods at every recomputation."""
    memo: dict[tuple[str, str], tuple[date, frozenset[str]]] = tree.memo.setdefault(_PERIOD_LAW, {})
    found = memo.get((jurisdiction, period))
    if found is None:
        parsed = Period.parse(period)
        found = memo[(jurisdiction, period)] = (
            period_due_date(jurisdiction, parsed, parameters=tree),
            obligations.declaration_filers(jurisdiction, parsed, parameters=tree),
        )
    return found


def period_bases(facts: Facts, as_of: date | None, *, fast: bool = True) -> dict[str, PeriodBasis]:
    """The liability of every period known on ``as_of`` (None: every fact). A period of one
    declaration version (most of them: a long account's every period an operator filed once)
    takes :func:`_one_version`; ``fast=False`` takes the general path for every period (the
    reference the tests compare the shortcut with, ``tests/test_period_bases_fast.py``)."""
    by_period: dict[str, list[Liability]] = defaultdict(list)
    for row in facts.liabilities:
        if _known(row.filed_on, as_of):
            by_period[row.period].append(row)
    estimates = {e.period: e for e in facts.estimates if _known(e.raised_on, as_of)}
    notices: dict[str, date] = {}
    for n in facts.notices:
        if _known(n.issued_on, as_of):
            notices[n.period] = min(notices.get(n.period, n.issued_on), n.issued_on)
    out: dict[str, PeriodBasis] = {}
    adjustments = adjustments_known(facts, as_of) if facts.adjustments else {}
    for period in sorted(by_period.keys() | estimates.keys()):
        due, filers = _period_law(facts.law, facts.jurisdiction, period)
        versions = by_period.get(period)
        if versions and fast and len(versions) == 1:
            out[period] = _one_version(
                versions[0], due, filers, notices.get(period), estimates.get(period), adjustments.get(period)
            )
        elif versions:
            latest: dict[str, Liability] = {}
            for row in versions:
                if row.filing_id not in latest or row.version > latest[row.filing_id].version:
                    latest[row.filing_id] = row
            filings = sorted(latest.values(), key=lambda r: (r.filed_on, r.filing_id))
            out[period] = PeriodBasis(
                period=period,
                due_date=due,
                basis="declaration",
                tax=sum((f.tax for f in filings), ZERO),
                impact_fee=sum((f.impact_fee for f in filings), ZERO),
                declaration_filed_on=obligations.earliest_filed_by(
                    ((r.filer_kind, r.filed_on) for r in versions),
                    filers,  # memoized: _period_law
                ),
                books_kept=all(f.books_kept for f in filings),
                notice_on=notices.get(period),
                filings=filings,
                estimate=None,
                superseded_estimate=estimates.get(period),
                adjustments=adjustments.get(period, []),
            )
        else:
            est = estimates[period]
            out[period] = PeriodBasis(
                period=period,
                due_date=due,
                basis="estimate",
                tax=est.tax,
                impact_fee=est.impact_fee,
                declaration_filed_on=None,
                books_kept=True,
                notice_on=notices.get(period),
                filings=[],
                estimate=est,
                superseded_estimate=None,
                adjustments=adjustments.get(period, []),
            )
    return out


def _one_version(
    row: Liability,
    due: date,
    filers: frozenset[str],
    notice_on: date | None,
    estimate: Estimate | None,
    adjustments: list[AdjustmentIn] | None,
) -> PeriodBasis:
    """:func:`period_bases`' general path for a period known by one declaration version ``row``,
    without its steps over versions and filings: the only filing is ``row`` (the latest of its
    filing), the sums over filings its amounts added to ``ZERO`` as ``sum`` does (so the
    exponent is the sum's: ``0.00 + 1.0`` is ``1.00``, and the digest keys on the text), the
    declaration filed on its day if its filer meets the obligation (``earliest_filed_by`` of
    one), the books kept as ``all`` of one says. Positional arguments, in the fields' order: a
    dataclass called with twelve keywords took 2.1 us, with them in order 0.8 (a long account's
    every period at every recomputation)."""
    return PeriodBasis(
        row.period,  # period
        due,  # due_date
        "declaration",  # basis
        ZERO + row.tax,  # tax
        ZERO + row.impact_fee,  # impact_fee
        row.filed_on if row.filer_kind in filers else None,  # declaration_filed_on
        bool(row.books_kept),  # books_kept
        notice_on,  # notice_on
        [row],  # filings
        None,  # estimate
        estimate,  # superseded_estimate
        [] if adjustments is None else adjustments,  # adjustments
    )


def _pieces(facts: Facts, as_of: date | None) -> list[Piece]:
    """Each payment received by ``as_of``, less what was reversed by ``as_of``.

    taxcore treats a payment reversed on or before the statement date as never
    received; a partial reversal leaves the rest of the payment in force from
    the day it was received. One piece per payment, named by the payment id,
    so a statement for a date before a reversal is the same whenever computed.
    """
    reversed_amount: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for r in facts.reversals:
        if _known(r.reversed_on, as_of):
            reversed_amount[r.payment_id] += r.amount
    out: list[Piece] = []
    for pay in facts.payments:
        if not _known(pay.received_on, as_of):
            continue
        rest = pay.amount - reversed_amount[pay.payment_id]
        if rest > 0:
            out.append(Piece(pay.payment_id, pay, rest, None))
    return sorted(out, key=lambda p: (p.payment.received_on, p.payment.payment_id))


def refundable_until(facts: Facts, pay: Payment) -> tuple[date, str]:
    """PR §42: 4 years from the declaration the payment came with, else 3 years from payment."""
    designated = {d["period"] for d in pay.designations}
    with_declaration = [
        row.filed_on
        for row in facts.liabilities
        if row.period in designated and row.filed_on == pay.received_on
    ]
    if with_declaration:
        rule = law.cited(law.REFUND_YEARS_FROM_DECLARATION, facts.jurisdiction, law=facts.law)
        return add_months(min(with_declaration), 12 * rule.value), rule.section
    rule = law.cited(law.REFUND_YEARS_FROM_PAYMENT, facts.jurisdiction, law=facts.law)
    return add_months(pay.received_on, 12 * rule.value), rule.section


class _Allocator:
    """Payments to periods in the documented order (module docstring, steps 1-4).

    What a period owes on a payment's day is taxcore's balance of the period with the
    pieces already applied to it (memoized). Money received on the day a period's
    balance was taken does not change what the period assessed by that day (taxcore
    accrues and assesses a day before it applies that day's money, and applies money up
    to what is outstanding), so a further piece of the same day is given what the period
    owed less what the day's pieces took: one taxcore walk per period and day, not per
    payment. ``same_day=False`` walks taxcore again for every piece (the reference the
    tests compare with).
    """

    def __init__(self, facts: Facts, periods: dict[str, PeriodBasis], *, same_day: bool = True) -> None:
        self.facts = facts
        self.periods = periods
        self.order = sorted(periods)
        self.pieces: dict[str, dict[str, tuple[date, Decimal]]] = defaultdict(dict)
        self.settled: set[str] = set()
        self.same_day = same_day
        self.owed_on: dict[str, tuple[date, Decimal]] = {}  # period -> (day, balance less that day's pieces)

    def owed(self, period: str, on: date) -> Decimal:
        if period in self.settled:
            return ZERO
        basis = self.periods[period]
        known = self.owed_on.get(period)
        if known is not None and known[0] == on:
            owed = known[1]
        else:
            history = basis.history(self.facts.jurisdiction, self.pieces[period], decided_by=on)
            owed = self.facts.balances.balance(history, on).balance
        if owed <= 0 and settles(basis, on):
            self.settled.add(period)  # paid and nothing can arise later: not walked again
        if self.same_day:
            self.owed_on[period] = (on, owed)
        return max(ZERO, owed)

    def assign(self, period: str, piece: Piece, amount: Decimal) -> None:
        on, already = self.pieces[period].get(piece.piece_id, (piece.payment.received_on, ZERO))
        self.pieces[period][piece.piece_id] = (on, already + amount)
        known = self.owed_on.get(period)
        if known is not None and known[0] == piece.payment.received_on:
            self.owed_on[period] = (known[0], known[1] - amount)

    def pay(self, piece: Piece, budget: dict[str, Decimal]) -> Decimal:
        on = piece.payment.received_on
        money = piece.amount
        for d in piece.payment.designations:
            period = d["period"]
            want = budget.get(period, ZERO)
            if money <= 0 or want <= 0 or period not in self.periods:
                continue
            take = min(want, money, self.owed(period, on))
            if take > 0:
                self.assign(period, piece, take)
                budget[period] = want - take
                money -= take
        for period in self.order:
            if money <= 0:
                break
            take = min(money, self.owed(period, on))
            if take > 0:
                self.assign(period, piece, take)
                money -= take
        return money


def _allocate(
    facts: Facts, as_of: date | None, taken: Mapping[str, Decimal], *, same_day: bool = True
) -> tuple[dict[str, PeriodBasis], _Allocator, list[Credit], dict[str, str]]:
    """Allocate the payments known on ``as_of`` (less what refunds already ``taken`` out of
    each) to the periods known on ``as_of``; what a payment leaves over is credit."""
    periods = period_bases(facts, as_of)
    alloc = _Allocator(facts, periods, same_day=same_day)
    budgets: dict[str, dict[str, Decimal]] = {}
    credits: list[Credit] = []
    piece_payment: dict[str, str] = {}
    for piece in _pieces(facts, as_of):
        pay = piece.payment
        amount = piece.amount - taken.get(pay.payment_id, ZERO)
        if amount <= 0:
            continue  # all of it was paid back out
        piece_payment[piece.piece_id] = pay.payment_id
        budget = budgets.setdefault(
            pay.payment_id, {d["period"]: Decimal(d["amount"]) for d in pay.designations}
        )
        left = alloc.pay(replace(piece, amount=amount), budget)
        if left > 0:
            until, section = refundable_until(facts, pay)
            credits.append(Credit(pay.payment_id, pay.received_on, left, until, section))
    return periods, alloc, credits, piece_payment


def account_state(facts: Facts, as_of: date | None, *, same_day: bool = True) -> AccountState:
    """Allocate the payments known on ``as_of`` to the periods known on ``as_of``.

    A paid refund takes the credit as it stood on the day it was paid out (each refund in
    the order paid, within the PR §42 limit), and that money has left the account: a period
    filed later cannot be paid with it. So the refunds are taken first, each from the
    allocation of its own day, and the allocation as of ``as_of`` uses what they left.
    """
    paid_on = facts.refund_paid_on()
    refunds = sorted(
        (r for r in facts.refunds if r.id in paid_on and _known(paid_on[r.id], as_of)),
        key=lambda r: (paid_on[r.id], r.id),
    )
    taken: dict[str, Decimal] = defaultdict(lambda: ZERO)  # payment id -> paid back out of it
    refunded = ZERO
    shortfall = ZERO
    for refund in refunds:
        want = refund.amount
        for credit in _allocate(facts, paid_on[refund.id], taken, same_day=same_day)[2]:
            if credit.refundable_until < refund.requested_on:
                continue  # past the PR §42 limit: not refundable
            take = min(want, credit.amount)
            taken[credit.payment_id] += take
            want -= take
        refunded += refund.amount - want
        shortfall += want
    periods, alloc, credits, piece_payment = _allocate(facts, as_of, taken, same_day=same_day)
    return AccountState(
        as_of=as_of,
        jurisdiction=facts.jurisdiction,
        periods=periods,
        pieces=dict(alloc.pieces),
        piece_payment=piece_payment,
        credits=credits,
        refunded=refunded,
        refund_shortfall=shortfall,
        balances=facts.balances,
    )


@dataclass
class PeriodStatement:
    basis: PeriodBasis
    balance: Balance
    applied: list[dict[str, Any]]


def period_statements(state: AccountState, as_of: date, *, explain: bool = True) -> list[PeriodStatement]:
    out: list[PeriodStatement] = []
    for period, basis in state.periods.items():
        history = state.history(period)
        if explain:
            bal = compute_balance(history, as_of=as_of, parameters=state.balances.law, explain=True)
        else:
            bal = state.balances.balance(history, as_of)
        applied: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
        for app in bal.applications:
            applied[(state.piece_payment.get(app.payment_id, app.payment_id), app.component)] += app.amount
        out.append(
            PeriodStatement(
                basis=basis,
                balance=bal,
                applied=[
                    {"payment_id": pid, "component": comp, "amount": amount}
                    for (pid, comp), amount in applied.items()
                ],
            )
        )
    return out


def latest_fact_date(facts: Facts) -> date | None:
    dates = [r.filed_on for r in facts.liabilities] + [e.raised_on for e in facts.estimates]
    dates += [p.received_on for p in facts.payments] + [r.reversed_on for r in facts.reversals]
    dates += [n.issued_on for n in facts.notices] + [r.requested_on for r in facts.refunds]
    dates += [a.effective_on for a in facts.adjustments] + [r.reversed_on for r in facts.adjustment_reversals]
    dates += [s.on for s in facts.refund_steps if s.step == "paid"]
    return max(dates, default=None)


def final_balances(state: AccountState) -> dict[str, tuple[date, Balance]]:
    """Each period's balance on the day its last payment was applied.

    Pieces never exceed what a period owed on their day, so nothing is left in
    taxcore's pool and the applications are final from that day on.
    """
    out: dict[str, tuple[date, Balance]] = {}
    for period, pieces in state.pieces.items():
        if pieces:
            last = max(on for on, _ in pieces.values())
            # decisions known restate the period from its due date: the payments apply as restated
            out[period] = (last, state.balances.balance(state.history(period, decided_by=last), last))
    return out


def settles(basis: PeriodBasis, on: date) -> bool:
    """Once paid in full on ``on``, the period owes nothing on any later day.

    True when the declaration is filed by ``on`` (the PR §47 fine stopped; paid in full, no
    principal is left for penalties or interest), the VI §54(l) books fine, assessed from the
    day after the due date, is no longer to come, and no adjustment fact of the period is
    dated after ``on``: a returned-payment fee (``cases.returned_payment_fee``, PR §29, VI
    §54(f)) is a charge from its own day and a write-off's reversal makes what it wrote off
    owed again from its day, so money received after either must still reach the period.
    """
    filed = basis.declaration_filed_on
    if filed is None or filed > on:
        return False
    if not basis.books_kept and on <= basis.due_date:
        return False
    return all(
        a.effective_on <= on and (a.reversed_on is None or a.reversed_on <= on) for a in basis.adjustments
    )


def settled(basis: PeriodBasis, on: date, bal: Balance) -> bool:
    """Paid in full on ``on`` and nothing can arise later (:func:`settles`): the balance
    cannot change afterwards."""
    return bal.balance == 0 and settles(basis, on)


def current_applications(
    state: AccountState, finals: dict[str, tuple[date, Balance]]
) -> dict[tuple[str, str, str], tuple[Decimal, str]]:
    """What is applied now of every payment: (payment, period, component) -> (amount, section).

    ``state`` is the allocation with every fact recorded (``account_state(facts, None)``).
    """
    out: dict[tuple[str, str, str], tuple[Decimal, str]] = {}
    for period, (_, bal) in finals.items():
        for app in bal.applications:
            key = (state.piece_payment[app.payment_id], period, app.component)
            amount, _ = out.get(key, (ZERO, app.section))
            out[key] = (amount + app.amount, app.section)
    return out
