"""The account's timeline: every fact and case-work step, oldest first, as the caller may see it."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts.ledger import Facts
from assessment.audits import service as audits
from assessment.casework import repository
from assessment.casework.schemas import Happened
from assessment.crosschecks import service as crosschecks
from assessment.plans import service as plans
from taxcore.money import fmt


async def entries(session: AsyncSession, *, facts: Facts) -> list[Happened]:
    account = facts.tax_account
    out: list[Happened] = []
    for n in facts.notices:
        out.append(
            Happened.of_row(
                n,
                on=n.issued_on,
                kind="notice.issued",
                subject_id=n.id,
                summary=f"{n.kind} notice: {fmt(n.total)} owed",
                period=n.period,
                by=n.issued_by,
                amount=n.total,
                section=n.section,
            )
        )
    for p in facts.payments:
        out.append(
            Happened.of_row(
                p,
                on=p.received_on,
                kind="payment.received",
                subject_id=p.payment_id,
                summary=f"payment by {p.method}",
                by=p.payer_id,
                amount=p.amount,
            )
        )
    for r in facts.reversals:
        out.append(
            Happened.of_row(
                r,
                on=r.reversed_on,
                kind="payment.reversed",
                subject_id=r.payment_id,
                summary=f"payment returned: {r.reason}",
                amount=r.amount,
                note=r.reason,
            )
        )
    for rf in facts.refunds:
        out.append(
            Happened.of_row(
                rf,
                on=rf.requested_on,
                kind="refund.requested",
                subject_id=rf.id,
                summary="refund of credit requested",
                by=rf.requested_by,
                amount=rf.amount,
            )
        )
    amounts = {rf.id: rf.amount for rf in facts.refunds}
    for st in facts.refund_steps:
        out.append(
            Happened.of_row(
                st,
                on=st.on,
                kind=f"refund.{st.step}",
                subject_id=st.refund_id,
                summary=f"refund {st.step.replace('_', ' ')}"
                + (f" by {st.details['method']} ({st.details['reference']})" if st.step == "paid" else ""),
                by=st.by,
                amount=amounts.get(st.refund_id),
            )
        )
    cases = {c.id: c for c in await repository.account_cases(session, account)}
    for s in await repository.account_steps(session, account):
        case = cases.get(s.case_id)
        detail = s.details.get("outcome") or s.details.get("hearing_on") or ""
        out.append(
            Happened.of_row(
                s,
                on=s.on,
                kind=f"case.{s.step}",
                subject_id=s.case_id,
                summary=f"case {s.step.replace('_', ' ')} {detail}".strip(),
                period=case.period if case else None,
                by=s.by,
            )
        )
    proposals = await repository.account_proposals(session, account)
    reviews = await repository.reviews_of(session, [prop.id for prop in proposals])
    for prop in proposals:
        out.append(
            Happened.of_row(
                prop,
                on=prop.proposed_on,
                kind="proposal.made",
                subject_id=prop.id,
                summary=f"{prop.action} proposed",
                period=prop.period,
                by=f"user:{prop.proposed_by}",
                amount=prop.amount,
            )
        )
        review = reviews.get(prop.id)
        if review is not None:
            out.append(
                Happened.of_row(
                    review,
                    on=review.reviewed_on,
                    kind=f"proposal.{review.outcome}",
                    subject_id=prop.id,
                    summary=f"{prop.action} {review.outcome}" + (f": {review.note}" if review.note else ""),
                    period=prop.period,
                    note=review.note,
                    by=f"user:{review.reviewed_by}",
                    amount=prop.amount,
                )
            )
    abatements = await repository.account_abatements(session, account)
    for a in abatements:
        out.append(
            Happened.of_row(
                a,
                on=a.requested_on,
                kind="abatement.requested",
                subject_id=a.id,
                summary=f"abatement of the {a.component} requested ({a.ground})",
                period=a.period,
                by=a.requested_by,
                amount=a.amount,
            )
        )
    if abatements:
        decided = await repository.account_abatement_decisions(session, account)
        periods = {a.id: a.period for a in abatements}
        for d in decided:
            out.append(
                Happened.of_row(
                    d,
                    on=d.decided_on,
                    kind=f"abatement.{d.outcome}",
                    subject_id=d.abatement_id,
                    summary=f"abatement {d.outcome}: {d.reasons}",
                    period=periods.get(d.abatement_id),
                    note=d.reasons,
                    by=f"user:{d.decided_by}",
                    amount=d.amount,
                )
            )
    for f in facts.adjustments:
        what = f"{f.kind} {f.component or ''}".strip()
        out.append(
            Happened.of_row(
                f,
                on=f.effective_on,
                kind=f"adjustment.{f.kind}",
                subject_id=f.id,
                summary=f"{what}: {f.reason} (approved by {f.approved_by})",
                period=f.period,
                note=f.reason,
                by=f"user:{f.approved_by}",
                amount=f.amount,
                section=f.section,
            )
        )
    by_fact = {f.id: f for f in facts.adjustments}
    for rv in facts.adjustment_reversals:
        fact = by_fact.get(rv.fact_id)
        out.append(
            Happened.of_row(
                rv,
                on=rv.reversed_on,
                kind="adjustment.reversed",
                subject_id=rv.fact_id,
                summary=f"write-off reversed: {rv.reason}",
                period=fact.period if fact else None,
                note=rv.reason,
                by=f"user:{rv.approved_by}",
                section=fact.section if fact else None,
            )
        )
    out.extend(await plans.timeline_entries(session, facts=facts))
    out.extend(await audits.timeline_entries(session, tax_account=account))
    out.extend(await crosschecks.timeline_entries(session, tax_account=account))
    out.sort(key=Happened.order)
    return out
