"""Account use-cases: statements, credits, refunds, collection postings, summaries."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from operator import itemgetter
from typing import Any

import pydantic_core
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository
from assessment.accounts.ledger import (
    AccountState,
    Facts,
    PeriodStatement,
    account_state,
    current_applications,
    final_balances,
    latest_fact_date,
    period_statements,
    settled,
)
from assessment.models import Refund
from assessment.refunds import steps as refunds_service
from servicekit import telemetry
from servicekit.consumer import once_per_batch
from servicekit.errors import NotFound, ValidationFailed
from servicekit.outbox import CURRENT_TRACE, OutboxEvent, Traceparent, emit_many
from taxcore.events.assessment import CollectionPosted
from taxcore.money import ZERO, fmt
from taxcore.rules.balance import COMPONENTS, Balance

POSTING_NAMESPACE = uuid.UUID("6f1c2b1e-59a4-4d43-9a4c-3f0c2f7a4d11")


def posting_id(payment_id: str, period: str, component: str, n: int) -> str:
    """Deterministic: the n-th posting of a payment to a period's component (0-based)."""
    return str(uuid.uuid5(POSTING_NAMESPACE, f"{payment_id}|{period}|{component}|{n}"))


PostingKey = tuple[str, str, str]  # (payment, period, component)


def held_credit(
    target: dict[PostingKey, tuple[Decimal, str]],
    posted: dict[PostingKey, tuple[Decimal, int, str]],
    credits: dict[str, Decimal],
) -> dict[PostingKey, Decimal]:
    """Money once applied and posted that a restatement turned into credit, and is still held.

    A decision or an amendment that lowers what a period owes turns money the funds
    already received into the account's credit. The agency still holds it (it pays
    periods that become known later), so it stays posted where it was; it leaves
    the funds only when it leaves the account: a paid refund, or a reversal of the
    payment. Per payment, what is held is the posted money no longer applied
    (``posted - applied``, netting any re-application elsewhere), up to the
    payment's credit left after refunds: a refund draws first on the part of the
    credit the funds never received (an overpayment), so only a refund of money
    already distributed is given back. The held money stays on the keys whose
    postings exceed what is applied now, in key order (period, component).
    """
    posted_by: dict[str, Decimal] = {}
    applied_by: dict[str, Decimal] = {}
    for (payment, _, _), (amount, _, _) in posted.items():
        posted_by[payment] = posted_by.get(payment, ZERO) + amount
    for (payment, _, _), (amount, _) in target.items():
        applied_by[payment] = applied_by.get(payment, ZERO) + amount
    held: dict[PostingKey, Decimal] = {}
    for payment, was in posted_by.items():
        keep = min(was - applied_by.get(payment, ZERO), credits.get(payment, ZERO))
        for key in sorted(k for k in posted if k[0] == payment):
            if keep <= 0:
                break
            short = posted[key][0] - target.get(key, (ZERO, ""))[0]
            if short > 0:
                held[key] = min(short, keep)
                keep -= held[key]
    return held


def collections_due(
    facts: Facts,
    target: dict[PostingKey, tuple[Decimal, str]],
    posted: repository.PostedTotals,
    *,
    credits: dict[str, Decimal] | None = None,
    refund_id: str | None = None,
    traces: BatchTraces | None = None,
) -> tuple[list[dict[str, object]], list[OutboxEvent]]:
    """The ``collection.posted`` postings (rows and events) for the difference between what
    should be posted and what was (``posted``). ``traces``: of a consumer's batch, each
    posting's event continues the trace of its payment's event (:class:`BatchTraces`).

    For every payment, the postings then add up to what is currently applied
    of it, per period and component, plus what of it is held as credit
    (:func:`held_credit`, with ``credits`` the account's credit per payment) --
    the contract's invariant. ``refund_id``: the paid refund that caused this
    recomputation; the negative postings (give-backs) carry it.
    """
    if not facts.payments:
        return [], []  # payments are never deleted: no payment, nothing applied and nothing posted
    if credits is not None:
        target = dict(target)
        for key, amount in held_credit(target, posted, credits).items():
            was, section = target.get(key, (ZERO, posted[key][2]))
            target[key] = (was + amount, section)
    payments = {p.payment_id: p for p in facts.payments}
    rows: list[dict[str, object]] = []
    events: list[OutboxEvent] = []
    for key in sorted(set(target) | set(posted)):
        payment_id, period, component = key
        want, section = target.get(key, (ZERO, ""))
        have, count, old_section = posted.get(key, (ZERO, 0, ""))
        delta = want - have
        if delta == 0:
            continue
        pay = payments.get(payment_id)
        if pay is None:  # pragma: no cover - postings only exist for known payments
            continue
        pid = posting_id(payment_id, period, component, count)
        row: dict[str, object] = {
            "posting_id": pid,
            "payment_id": payment_id,
            "tax_account": facts.tax_account,
            "period": period,
            "component": component,
            "amount": delta,
            "collected_on": pay.received_on,
            "section": section or old_section,
        }
        rows.append(row)
        events.append(
            OutboxEvent.of(
                CollectionPosted(
                    posting_id=pid,
                    payment_id=payment_id,
                    tax_account=facts.tax_account,
                    jurisdiction=facts.jurisdiction,
                    lodging_class=facts.class_in(period),
                    period=period,
                    component=component,
                    amount=delta,
                    collected_on=pay.received_on,
                    section=section or old_section,
                    refund_id=refund_id if delta < 0 else None,
                ),
                key=facts.tax_account,
                event_id=pid,
                traceparent=traces.of(facts.tax_account, payment_id) if traces else CURRENT_TRACE,
            )
        )
    return rows, events


_DIGEST_AT = repository.SUMMARY_INDEX["balance_digest"]
_AS_OF_AT = repository.SUMMARY_INDEX["as_of"]
#: a stored row's fields before its figures: the key, the account's columns, the period's basis
_HEAD = slice(0, repository.SUMMARY_INDEX["principal"])


def summary_rows(
    facts: Facts,
    on: date,
    *,
    state: AccountState | None = None,
    finals: dict[str, tuple[date, Balance]] | None = None,
    stored: Mapping[str, repository.StoredSummary] | None = None,
    changed_only: bool = False,
) -> list[dict[str, object]]:
    """Per-period balances as of ``on``. A period settled by its last payment (``finals``)
    keeps that balance, so only open periods are walked to ``on``.

    ``changed_only``: only the rows that differ from the stored ones (``stored``: period ->
    row, as ``repository.stored_summaries`` reads them). An open period whose stored row was
    computed from the same :meth:`~assessment.accounts.ledger.BalanceCache.digest` (the same
    history, day, law and taxcore) has the stored figures (the walk would give them again), so
    it is the stored row when its other fields are: they are compared without walking the
    period or building the row (a long account's batch keeps nearly all of its 15,000 rows;
    its stored figures are not even read). A row of the same digest that differs elsewhere
    (another operator, another day) is walked again, through the balance cache."""
    state = state or account_state(facts, on)
    finals = finals or {}
    stored = stored or {}
    rows: list[dict[str, object]] = []
    account = {  # the same on every period's row (the class without a lodging sorts the returns)
        "tax_account": facts.tax_account,
        "jurisdiction": facts.jurisdiction,
        "lodging_class": facts.lodging_class,
        "operator_id": facts.lodging.operator_id if facts.lodging else None,
    }
    columns = (account["jurisdiction"], account["lodging_class"], account["operator_id"])
    for period, basis in state.periods.items():
        final = finals.get(period)
        digest: bytes | None = None
        old = stored.get(period)
        figures: dict[str, object]
        if final is not None and final[0] <= on and settled(basis, final[0], final[1]):
            figures = _figures(final[1])
        else:
            digest = state.digest(period, on)
            if changed_only and old is not None and old[_DIGEST_AT] == digest and old[_AS_OF_AT] == on:
                if old[_HEAD] == (facts.tax_account, period, *columns, basis.due_date, basis.basis):
                    continue  # the stored row, field for field (its figures are its digest's)
            figures = _figures(facts.balances.balance(state.history(period), on))
        row: dict[str, object] = {
            "tax_account": account["tax_account"],
            "period": period,
            "jurisdiction": account["jurisdiction"],
            "lodging_class": account["lodging_class"],
            "operator_id": account["operator_id"],
            "due_date": basis.due_date,
            "basis": basis.basis,
            **figures,
            "as_of": on,
            "balance_digest": digest,
        }
        if not (changed_only and old is not None and old == _SUMMARY_FIELDS(row)):
            rows.append(row)
    return rows


def _figures(bal: Balance) -> dict[str, object]:
    principal = sum((c.assessed for c in bal.components if c.component in ("tax", "impact_fee")), ZERO)
    return {
        "principal": principal,
        "total_assessed": bal.total_assessed,
        "total_paid": bal.total_paid,
        "balance": bal.balance,
    }


#: a row's fields as a tuple, compared with its stored row at once
_SUMMARY_FIELDS = itemgetter(*repository.SUMMARY_FIELDS)


async def refresh_summary(session: AsyncSession, *, facts: Facts, as_of: date) -> None:
    """Re-materialize the account's per-period balances as of ``as_of`` (the caller's today:
    dashboards read them)."""
    await repository.upsert_summaries(session, summary_rows(facts, as_of), facts.tax_account)


async def recompute(
    session: AsyncSession, *, tax_account: str, facts: Facts | None = None, refund_id: str | None = None
) -> Facts | None:
    """After any change of an account's facts: post collections, refresh its summary.

    ``facts``: the account's facts already loaded in this transaction, after the
    change (saves loading them again); by default they are loaded here.
    ``refund_id``: the change is that refund's payment (its give-backs name it).
    """
    if facts is None:
        facts = await repository.load_facts(session, tax_account, traces=False)
    if facts is None:
        return None
    await _recompute_loaded(session, [facts], refund_id=refund_id)
    return facts


async def recompute_accounts(
    session: AsyncSession, *, tax_accounts: Sequence[str], traces: BatchTraces | None = None
) -> None:
    """:func:`recompute` each account, with the same statements whatever their number: the
    facts loaded per table (read only: records, not ORM objects, as nothing here changes them;
    of the liabilities only the columns read here), the postings, their events and the
    summaries written at once."""
    loaded = await repository.load_records_many(session, tax_accounts, columns="recompute")
    await _recompute_loaded(session, list(loaded.values()), traces=traces)


async def _recompute_loaded(
    session: AsyncSession,
    loaded: Sequence[Facts],
    *,
    refund_id: str | None = None,
    traces: BatchTraces | None = None,
) -> None:
    posted = await repository.posted_totals_many(session, [f.tax_account for f in loaded if f.payments])
    stored = await repository.stored_summaries(session, [f.tax_account for f in loaded])
    on = repository.runtime_of(session).today()  # the day of the app's or worker's clock
    postings: list[dict[str, object]] = []
    events: list[OutboxEvent] = []
    summaries: list[dict[str, object]] = []  # the rows that changed
    gone: list[tuple[str, str]] = []  # the stored rows of periods no longer known
    for facts in loaded:
        state = account_state(facts, None)
        finals = final_balances(state)
        if facts.payments:
            credits: dict[str, Decimal] = {}
            for credit in state.credits:
                credits[credit.payment_id] = credits.get(credit.payment_id, ZERO) + credit.amount
            rows, evs = collections_due(
                facts,
                current_applications(state, finals),
                posted[facts.tax_account],
                credits=credits,
                refund_id=refund_id,
                traces=traces,
            )
            postings += rows
            events += evs
        latest = latest_fact_date(facts)
        known = stored[facts.tax_account]
        if latest is not None and latest > on:  # a fact dated after today: allocate as of today
            state, finals = account_state(facts, on), {}
        summaries += summary_rows(facts, on, state=state, finals=finals, stored=known, changed_only=True)
        gone += [(facts.tax_account, p) for p in known if p not in state.periods]
    await emit_many(session, events)  # the outbox rows of the postings, in order, in one statement
    await repository.insert_postings(session, postings)
    if loaded:
        await repository.upsert_summaries(session, summaries, [f.tax_account for f in loaded], gone=gone)


_BATCH_ACCOUNTS = "assessment.recompute"


@dataclass(slots=True)
class BatchTraces:
    """Whose trace each account's and each payment's events continue, in a consumer's batch.

    The batch recomputes its accounts together at its end (:func:`recompute_after_batch`),
    inside the span of whichever event asked first; without this, a payment's
    ``collection.posted`` would carry the trace of another event of its batch (another
    account's declaration, say). A posting continues the trace of the last event of its
    payment in the batch (received, reversed), else of its account's first event.
    """

    accounts: dict[str, str | None] = field(default_factory=dict)
    payments: dict[str, str | None] = field(default_factory=dict)

    def note(self, tax_account: str, payment_id: str | None) -> None:
        traceparent = telemetry.current_traceparent()
        self.accounts.setdefault(tax_account, traceparent)
        if payment_id is not None:
            self.payments[payment_id] = traceparent

    def of(self, tax_account: str, payment_id: str) -> Traceparent:
        if payment_id in self.payments:
            return self.payments[payment_id]
        return self.accounts.get(tax_account, CURRENT_TRACE)


async def recompute_after_batch(
    session: AsyncSession, *, tax_account: str, payment_id: str | None = None
) -> None:
    """:func:`recompute` the account once the consumer's batch is applied (once however
    many of its events touched the account, and every account of the batch together:
    :func:`recompute_accounts`); right away outside a consumer. ``payment_id``: the
    payment the event changed (its postings continue that event's trace: :class:`BatchTraces`)."""
    accounts: dict[str, None] | None = session.info.get(_BATCH_ACCOUNTS)
    traces: BatchTraces = session.info.setdefault(_BATCH_ACCOUNTS + ".traces", BatchTraces())
    traces.note(tax_account, payment_id)
    if accounts is not None:
        accounts[tax_account] = None
        return
    accounts = session.info[_BATCH_ACCOUNTS] = {tax_account: None}
    wave = session.info[_BATCH_ACCOUNTS + ".wave"] = session.info.get(_BATCH_ACCOUNTS + ".wave", 0) + 1

    async def work() -> None:
        # accounts asked for from now on (work deferred by this work) make a new wave
        todo = list(session.info.pop(_BATCH_ACCOUNTS))
        await recompute_accounts(
            session, tax_accounts=todo, traces=session.info.pop(_BATCH_ACCOUNTS + ".traces", None)
        )

    await once_per_batch(session, ("recompute", wave), work)


# --------------------------------------------------------------------------- statements

_AMOUNTS: dict[Decimal, str] = {}
_AMOUNTS_SIZE = 1 << 16


def _amount(value: Decimal) -> str:
    """``fmt(value)``, memoized: a statement formats ~4,000 amounts, most of them a few values
    (0.00 first). ``fmt`` depends on the amount's value only (``1.0`` and ``1.00`` are equal,
    hash alike and format alike), so a value seen before is not quantized again."""
    found = _AMOUNTS.get(value)
    if found is None:
        if len(_AMOUNTS) >= _AMOUNTS_SIZE:
            _AMOUNTS.clear()
        found = _AMOUNTS[value] = fmt(value)
    return found


def _component_map(st: PeriodStatement) -> dict[str, dict[str, str]]:
    return {
        c.component: {
            "assessed": _amount(c.assessed),
            "paid": _amount(c.paid),
            "outstanding": _amount(c.outstanding),
        }
        for c in st.balance.components
    }


def _period_out(st: PeriodStatement, state: AccountState, *, explain: bool) -> dict[str, Any]:
    b = st.basis
    bal = st.balance
    comps = {c.component: c for c in bal.components}
    penalties = [
        {
            "kind": "late_payment_penalty",
            "amount": _amount(comps["penalty"].assessed),
            "paid": _amount(comps["penalty"].paid),
        },
    ]
    reasons = [f.deficiency_reason for f in b.filings if f.deficiency_reason]
    out: dict[str, Any] = {
        "period": b.period,
        "due_date": b.due_date,
        "basis": b.basis,
        "declaration_filed_on": b.declaration_filed_on,
        "filings": [
            {
                "declaration_id": f.declaration_id,
                "filing_id": f.filing_id,
                "version": f.version,
                "filer_kind": f.filer_kind,
                "filer_id": f.filer_id,
                "filed_on": f.filed_on,
                "tax": _amount(f.tax),
                "impact_fee": _amount(f.impact_fee),
                "declared_total": _amount(f.declared_total) if f.declared_total is not None else None,
                "deficiency": _amount(f.deficiency),
                "deficiency_reason": f.deficiency_reason,
            }
            for f in b.filings
        ],
        "estimate": _estimate_out(b.estimate or b.superseded_estimate, superseded=b.estimate is None),
        "principal": {
            "tax": _amount(comps["tax"].assessed),
            "impact_fee": _amount(comps["impact_fee"].assessed),
        },
        "deficiency": _amount(b.deficiency),
        "deficiency_reasons": reasons,
        "penalties": penalties,
        "interest": _amount(comps["interest"].assessed),
        "fines": _amount(comps["fine"].assessed),
        "components": _component_map(st),
        "payments": [
            {"payment_id": a["payment_id"], "component": a["component"], "amount": _amount(a["amount"])}
            for a in st.applied
        ],
        "total_assessed": _amount(bal.total_assessed),
        "total_paid": _amount(bal.total_paid),
        "balance": _amount(bal.balance),
        "days_late": bal.days_late,
        "notice_issued_on": b.notice_on,
        "total_adjusted": _amount(bal.total_adjusted),
        "written_off": _amount(bal.written_off),
        "adjustments": [
            {
                "fact_id": a.fact_id,
                "kind": a.kind,
                "component": a.component,
                "effective_on": a.effective_on,
                "amount": _amount(a.amount),
                "section": a.section,
                "reason": a.reason,
                "proposed_by": a.proposed_by,
                "approved_by": a.approved_by,
                "reversed_on": a.reversed_on,
            }
            for a in bal.adjustments
        ],
    }
    out["explain"] = (
        {
            "balance": bal.trace,
            "liabilities": [{"declaration_id": f.declaration_id, "trace": f.trace} for f in b.filings],
            "estimate": b.estimate.trace if b.estimate is not None else None,
        }
        if explain
        else None
    )
    return out


def _estimate_out(est: Any, *, superseded: bool) -> dict[str, Any] | None:
    if est is None:
        return None
    return {
        "estimate_id": est.id,
        "raised_on": est.raised_on,
        "taxable_base": _amount(est.taxable_base),
        "tax": _amount(est.tax),
        "impact_fee": _amount(est.impact_fee),
        "method": est.method,
        "status": "superseded" if superseded else "in_force",
    }


def credits_out(state: AccountState) -> dict[str, Any]:
    return {
        "total": _amount(state.credit),
        "refunded": _amount(state.refunded),
        "items": [
            {
                "payment_id": c.payment_id,
                "received_on": c.received_on,
                "amount": _amount(c.amount),
                "refundable_until": c.refundable_until,
                "section": c.section,
            }
            for c in state.credits
        ],
    }


def statement(facts: Facts, *, as_of: date, explain: bool) -> dict[str, Any]:
    state = account_state(facts, as_of)
    periods = period_statements(state, as_of, explain=explain)
    totals = {"total_assessed": ZERO, "total_paid": ZERO, "balance": ZERO}
    by_component = dict.fromkeys(COMPONENTS, ZERO)
    for st in periods:
        totals["total_assessed"] += st.balance.total_assessed
        totals["total_paid"] += st.balance.total_paid
        totals["balance"] += st.balance.balance
        for c in st.balance.components:
            by_component[c.component] = by_component.get(c.component, ZERO) + c.outstanding
    received = [
        {
            "payment_id": p.payment_id,
            "received_on": p.received_on,
            "amount": _amount(p.amount),
            "designations": p.designations,
            "reversed": [
                {"reversal_id": r.reversal_id, "amount": _amount(r.amount), "reversed_on": r.reversed_on}
                for r in facts.reversals
                if r.payment_id == p.payment_id and r.reversed_on <= as_of
            ],
        }
        for p in sorted(facts.payments, key=lambda p: (p.received_on, p.payment_id))
        if p.received_on <= as_of
    ]
    return {
        "tax_account": facts.tax_account,
        "jurisdiction": facts.jurisdiction,
        "lodging_class": facts.lodging_class,
        "as_of": as_of,
        "currency": "USD",
        "periods": [_period_out(st, state, explain=explain) for st in periods],
        "totals": {k: _amount(v) for k, v in totals.items()},
        "outstanding_by_component": {k: _amount(v) for k, v in by_component.items()},
        "payments": received,
        "credit": credits_out(state),
    }


def statement_json(facts: Facts, *, as_of: date) -> bytes:
    """The statement (``explain=False``) as the JSON of :class:`~assessment.accounts.schemas.Statement`,
    byte for byte, without building the model: :func:`statement`'s dict holds the wire values
    already (amounts formatted by ``fmt``, the fields in the schema's order, ``explain`` null),
    so parsing ~4,000 amounts back into the model only to format them again is skipped."""
    return pydantic_core.to_json(statement(facts, as_of=as_of, explain=False))


# --------------------------------------------------------------------------- refunds


async def request_refund(
    session: AsyncSession,
    *,
    facts: Facts,
    amount: Decimal,
    requested_on: date,
    requested_by: str,
    today: date,
) -> tuple[Refund, AccountState]:
    """Refund credit still within PR §42 (4 years from the declaration it came with, else 3 from payment)."""
    if requested_on > today:
        raise ValidationFailed.on("requested_on", "is in the future")
    state = account_state(facts, requested_on)
    refundable = sum((c.amount for c in state.credits if c.refundable_until >= requested_on), ZERO)
    refundable -= refunds_service.open_amount(facts)  # requested or approved, not yet paid or denied
    if amount > refundable:
        lapsed = sum((c.amount for c in state.credits if c.refundable_until < requested_on), ZERO)
        detail = f"at most {fmt(refundable)} of credit is refundable on {requested_on.isoformat()}"
        if lapsed:
            detail += f" ({fmt(lapsed)} more is past the PR §42 limit)"
        raise ValidationFailed.on("amount", detail)
    refund = Refund(
        tax_account=facts.tax_account, amount=amount, requested_on=requested_on, requested_by=requested_by
    )
    session.add(refund)
    await session.flush()
    facts.refunds.append(refund)
    await refunds_service.emit_step(
        session, facts, refund, step="requested", on=requested_on, by=requested_by
    )
    return refund, account_state(facts, requested_on)


async def get_facts(session: AsyncSession, *, tax_account: str) -> Facts:
    facts = await repository.load_facts(session, tax_account)
    if facts is None:
        raise NotFound(f"no account {tax_account!r}")
    return facts
