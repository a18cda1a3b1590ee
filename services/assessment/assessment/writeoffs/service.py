"""Write-offs of uncollectible balances, and their reversal when money appears.

An agency person proposes writing off a period's balance (business closed, bankrupt,
uncollectible, or the limitation period passed: ``cases.write_off_limitation_years``,
provisional); another approves (maker-checker). From the approval date the write-off
is an adjustment fact: taxcore stops accrual and nothing is owed; collection actions
(the bond draw) stop. It stays on the record and can be reversed: from the reversal
date the written-off amounts are owed again and accrual resumes. A period under an
open case or appeal is not written off (409).
"""

from __future__ import annotations

from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts
from assessment.cases import service as cases_service
from assessment.casework import approvals, law, repository
from assessment.casework import facts as adjustments
from assessment.casework.facts import balances_on
from assessment.casework.models import AdjustmentFact, Proposal, ProposalReview
from assessment.settings import AssessmentSettings
from assessment.writeoffs.schemas import WriteOffCreate, WriteOffOut
from servicekit.auth import Principal
from servicekit.errors import Conflict, NotFound, ValidationFailed
from taxcore.money import fmt
from taxcore.rules.balance import add_months


def _conflict(detail: str, pointer: str = "#/body/period") -> Conflict:
    return approvals.conflict(detail, pointer)


def in_force(facts: Facts, period: str, *, today: date) -> AdjustmentFact | None:
    """The period's write-off in force today (not reversed), if any."""
    reversed_ids = {r.fact_id for r in facts.adjustment_reversals if r.reversed_on <= today}
    for f in facts.adjustments:
        if f.period == period and f.kind == "write_off" and f.id not in reversed_ids:
            return f
    return None


async def propose(
    session: AsyncSession,
    *,
    facts: Facts,
    principal: Principal,
    settings: AssessmentSettings,
    ask: WriteOffCreate,
    today: date,
) -> Proposal:
    """Propose writing off the period's balance today (another agency person approves)."""
    period, reason, explanation = ask.period, ask.reason, ask.explanation
    approvals.may_propose(principal, settings)
    bal = balances_on(facts, period, today)
    if bal is None:
        raise ValidationFailed.on("period", f"the account has no liability for {period}")
    if in_force(facts, period, today=today) is not None:
        raise _conflict(f"{period} is already written off")
    for case in await repository.account_cases(session, facts.tax_account):
        if case.period == period:
            current = await cases_service.view(session, case=case, on=today)
            if current.status not in ("decided", "closed"):  # open, or under appeal
                raise _conflict(f"{period} is in case {case.id} ({current.status}): decide it first")
    if bal.balance <= 0:
        raise _conflict(f"nothing is owed for {period} on {today.isoformat()}")
    if reason == "limitation_passed":
        years = law.write_off_limitation_years(facts.jurisdiction, today, law=facts.law)
        from_on = add_months(bal.due_date, 12 * years.value)
        if today <= from_on:
            raise ValidationFailed.on(
                "reason",
                f"the limitation period ({years.value} years from {bal.due_date.isoformat()}, "
                f"{years.section}, provisional) passes after {from_on.isoformat()}",
            )
    return await approvals.propose(
        session,
        tax_account=facts.tax_account,
        period=period,
        action="write_off.approve",
        subject_id=f"{facts.tax_account}:{period}",
        amount=bal.balance,
        payload={"reason": reason, "explanation": explanation, "balance": fmt(bal.balance)},
        principal=principal,
        settings=settings,
        today=today,
    )


@approvals.executor("write_off.approve")
async def _approve(session: AsyncSession, proposal: Proposal, review: ProposalReview) -> None:
    facts = await accounts_repo.load_facts(session, proposal.tax_account)
    assert facts is not None
    assert proposal.period is not None
    if in_force(facts, proposal.period, today=review.reviewed_on) is not None:
        raise _conflict(f"{proposal.period} is already written off")
    row = AdjustmentFact(
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        period=proposal.period,
        kind="write_off",
        component=None,
        amount=None,
        effective_on=review.reviewed_on,
        section=law.section(facts.jurisdiction, "write_off", review.reviewed_on, law=facts.law),
        reason=f"{proposal.payload['reason']}: {proposal.payload['explanation']}",
        proposed_by=proposal.proposed_by,
        approved_by=review.reviewed_by,
        source_kind="write_off",
        source_id=proposal.id,
    )
    await adjustments.record(session, facts, [row], field="period")


async def reverse(
    session: AsyncSession,
    *,
    facts: Facts,
    fact: AdjustmentFact,
    principal: Principal,
    settings: AssessmentSettings,
    reason: str,
    today: date,
) -> None:
    """Money appeared: the written-off amounts are owed again from today (raising what is owed
    needs one agency person)."""
    who = approvals.may_propose(principal, settings)
    if await repository.reversal_of(session, fact.id) is not None:
        raise _conflict("the write-off is already reversed", "#/write_off/status")
    await adjustments.reverse(
        session, facts, fact, reversed_on=today, reason=reason, proposed_by=None, approved_by=who
    )


async def get_fact(session: AsyncSession, *, fact_id: str) -> AdjustmentFact:
    fact = await session.get(AdjustmentFact, fact_id)
    if fact is None or fact.kind != "write_off":
        raise NotFound(f"no write-off {fact_id!r}")
    return fact


async def view(session: AsyncSession, *, fact: AdjustmentFact) -> WriteOffOut:
    return WriteOffOut.of(fact, await repository.reversal_of(session, fact.id))
