"""The account's timeline: every fact and case-work step, oldest first, as the caller may see it."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts.ledger import Facts
from assessment.audits import service as audits
from assessment.casework import repository
from assessment.crosschecks import service as crosschecks
from assessment.plans import service as plans
from taxcore.money import fmt

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _entry(
    on: date,
    kind: str,
    subject_id: str,
    summary: str,
    *,
    period: str | None = None,
    by: str | None = None,
    amount: Decimal | None = None,
    section: str | None = None,
    written: datetime | None = None,
    seq: int = 0,
    note: str | None = None,
) -> tuple[date, datetime, int, dict[str, Any]]:
    return (
        on,
        written or _EPOCH,
        seq,
        {
            "on": on,
            "kind": kind,
            "subject_id": subject_id,
            "period": period,
            "by": by,
            "amount": amount,
            "section": section,
            "summary": summary,
            "note": note,
        },
    )


async def entries(session: AsyncSession, *, facts: Facts) -> list[dict[str, Any]]:
    account = facts.tax_account
    out: list[tuple[date, datetime, int, dict[str, Any]]] = []
    for n in facts.notices:
        out.append(
            _entry(
                n.issued_on,
                "notice.issued",
                n.id,
                f"{n.kind} notice: {fmt(n.total)} owed",
                period=n.period,
                by=n.issued_by,
                amount=n.total,
                section=n.section,
                written=n.created_at,
            )
        )
    for p in facts.payments:
        out.append(
            _entry(
                p.received_on,
                "payment.received",
                p.payment_id,
                f"payment by {p.method}",
                by=p.payer_id,
                amount=p.amount,
                written=p.created_at,
            )
        )
    for r in facts.reversals:
        out.append(
            _entry(
                r.reversed_on,
                "payment.reversed",
                r.payment_id,
                f"payment returned: {r.reason}",
                amount=r.amount,
                note=r.reason,
                written=r.created_at,
            )
        )
    for rf in facts.refunds:
        out.append(
            _entry(
                rf.requested_on,
                "refund.requested",
                rf.id,
                "refund of credit requested",
                by=rf.requested_by,
                amount=rf.amount,
                written=rf.created_at,
            )
        )
    amounts = {rf.id: rf.amount for rf in facts.refunds}
    for st in facts.refund_steps:
        out.append(
            _entry(
                st.on,
                f"refund.{st.step}",
                st.refund_id,
                f"refund {st.step.replace('_', ' ')}"
                + (f" by {st.details['method']} ({st.details['reference']})" if st.step == "paid" else ""),
                by=st.by,
                amount=amounts.get(st.refund_id),
                written=st.created_at,
                seq=st.seq,
            )
        )
    cases = {c.id: c for c in await repository.account_cases(session, account)}
    for s in await repository.account_steps(session, account):
        case = cases.get(s.case_id)
        detail = s.details.get("outcome") or s.details.get("hearing_on") or ""
        out.append(
            _entry(
                s.on,
                f"case.{s.step}",
                s.case_id,
                f"case {s.step.replace('_', ' ')} {detail}".strip(),
                period=case.period if case else None,
                by=s.by,
                written=s.created_at,
                seq=s.seq,
            )
        )
    proposals = await repository.account_proposals(session, account)
    reviews = await repository.reviews_of(session, [prop.id for prop in proposals])
    for prop in proposals:
        out.append(
            _entry(
                prop.proposed_on,
                "proposal.made",
                prop.id,
                f"{prop.action} proposed",
                period=prop.period,
                by=f"user:{prop.proposed_by}",
                amount=prop.amount,
                written=prop.created_at,
                seq=prop.seq,
            )
        )
        review = reviews.get(prop.id)
        if review is not None:
            out.append(
                _entry(
                    review.reviewed_on,
                    f"proposal.{review.outcome}",
                    prop.id,
                    f"{prop.action} {review.outcome}" + (f": {review.note}" if review.note else ""),
                    period=prop.period,
                    note=review.note,
                    by=f"user:{review.reviewed_by}",
                    amount=prop.amount,
                    written=review.created_at,
                    seq=review.seq,
                )
            )
    abatements = await repository.account_abatements(session, account)
    for a in abatements:
        out.append(
            _entry(
                a.requested_on,
                "abatement.requested",
                a.id,
                f"abatement of the {a.component} requested ({a.ground})",
                period=a.period,
                by=a.requested_by,
                amount=a.amount,
                written=a.created_at,
                seq=a.seq,
            )
        )
    if abatements:
        decided = await repository.account_abatement_decisions(session, account)
        periods = {a.id: a.period for a in abatements}
        for d in decided:
            out.append(
                _entry(
                    d.decided_on,
                    f"abatement.{d.outcome}",
                    d.abatement_id,
                    f"abatement {d.outcome}: {d.reasons}",
                    period=periods.get(d.abatement_id),
                    note=d.reasons,
                    by=f"user:{d.decided_by}",
                    amount=d.amount,
                    written=d.created_at,
                    seq=d.seq,
                )
            )
    for f in facts.adjustments:
        what = f"{f.kind} {f.component or ''}".strip()
        out.append(
            _entry(
                f.effective_on,
                f"adjustment.{f.kind}",
                f.id,
                f"{what}: {f.reason} (approved by {f.approved_by})",
                period=f.period,
                note=f.reason,
                by=f"user:{f.approved_by}",
                amount=f.amount,
                section=f.section,
                written=f.created_at,
                seq=f.seq,
            )
        )
    by_fact = {f.id: f for f in facts.adjustments}
    for rv in facts.adjustment_reversals:
        fact = by_fact.get(rv.fact_id)
        out.append(
            _entry(
                rv.reversed_on,
                "adjustment.reversed",
                rv.fact_id,
                f"write-off reversed: {rv.reason}",
                period=fact.period if fact else None,
                note=rv.reason,
                by=f"user:{rv.approved_by}",
                section=fact.section if fact else None,
                written=rv.created_at,
                seq=rv.seq,
            )
        )
    out.extend(_entry(**e) for e in await plans.timeline_entries(session, facts=facts))
    out.extend(_entry(**e) for e in await audits.timeline_entries(session, tax_account=account))
    out.extend(_entry(**e) for e in await crosschecks.timeline_entries(session, tax_account=account))
    out.sort(key=lambda e: (e[0], e[1], e[2]))
    return [e[3] for e in out]
