"""Payment plans (installment agreements): request, grant, progress, default.

An agency person (a case proposer role) grants a plan for the balance of some periods of
an account as of a date: a down payment and installments that add up to it exactly. A
plan lowers nothing -- interest and the §46/§54(i) charges keep accruing and stay on the
statement -- it defers collection: while it is current (``plans.schedule``) no deficiency
notice is issued for its periods and no bond is drawn for them (``plans.hold``, read by
``notices.service``). So it is decided by one person, not proposed and approved
(maker-checker is for what lowers what is owed or pays money out).

The account's payments fill the installments (``plans.schedule``); each installment paid,
the plan completed, and a default (an installment unpaid past ``cases.plan_grace_days``)
is recorded once as a step with its event. A returned payment (reversed) that leaves an
installment paid before unpaid again records it reopened (``installment_reopened``; a
completed plan: ``reopened``), with its event: the installment is due again by its own
terms, and paid again it is recorded paid again. Steps stay append-only: each cycle's
key ends in its number (``installment_paid:1``, ``installment_reopened:1:1``,
``installment_paid:1:1``). A default issues a notice of each planned
period's deficiency on that day, and collection resumes: the notices' terms run, then the
bond draw (PR §33).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from assessment import law
from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts, account_state, period_statements
from assessment.accounts.service import recompute
from assessment.cases import service as cases_service
from assessment.casework import approvals, work
from assessment.casework.events import event_id
from assessment.casework.schemas import Happened
from assessment.notices.service import issue_notice
from assessment.plans import repository
from assessment.plans.hold import state
from assessment.plans.models import PaymentPlan, PlanInstallment, PlanRequest, PlanStep
from assessment.plans.schedule import InstallmentState, PlanState, equal_amounts, monthly
from assessment.plans.schemas import PlanCreate, PlanOut, PlanRequestCreate, PlanRequestOut
from assessment.rows import from_row
from assessment.settings import AssessmentSettings
from servicekit.auth import Principal
from servicekit.errors import Forbidden, NotFound, ValidationFailed
from servicekit.outbox import emit
from taxcore.events import EventData
from taxcore.events.plans import (
    InstallmentTerm,
    PlanCompleted,
    PlanDefaulted,
    PlanGranted,
    PlanInstallmentPaid,
    PlanInstallmentReopened,
    PlanReopened,
    PlanRequestDeclined,
    PlanRequested,
)
from taxcore.money import ZERO, fmt

GRACE_DAYS = "cases.plan_grace_days"


@dataclass(frozen=True, slots=True)
class Line:
    due_on: date
    amount: Decimal


def owed_on(facts: Facts, on: date) -> dict[str, Decimal]:
    """Each period's balance on ``on``, where something is owed."""
    st = account_state(facts, on)
    return {
        s.basis.period: s.balance.balance
        for s in period_statements(st, on, explain=False)
        if s.balance.balance > 0
    }


async def current_plans(session: AsyncSession, *, facts: Facts, on: date) -> list[PaymentPlan]:
    plans = [p for p in await repository.account_plans(session, facts.tax_account) if p.granted_on <= on]
    schedules = await repository.installments(session, [p.id for p in plans])
    return [p for p in plans if state(facts, p, schedules[p.id], on).status == "current"]


def _check_schedule(as_of: date, down: Line | None, lines: list[Line], planned: Decimal) -> None:
    if down is not None and down.due_on <= as_of:
        raise ValidationFailed.on(
            "down_payment.due_on", f"must be after the balance date {as_of.isoformat()}"
        )
    last = down.due_on if down is not None else as_of
    for i, line in enumerate(lines):
        if line.due_on <= last:
            raise ValidationFailed.on(
                f"installments[{i}].due_on",
                f"must be after {last.isoformat()} (the balance date or the installment before)",
            )
        last = line.due_on
    scheduled = sum((x.amount for x in lines), down.amount if down is not None else ZERO)
    if scheduled != planned:
        raise ValidationFailed.on(
            "installments",
            f"the down payment and installments add up to {fmt(scheduled)}, not the planned amount "
            f"{fmt(planned)} (the balance on {as_of.isoformat()})",
        )


def _installments(grant: PlanCreate, planned: Decimal) -> list[Line]:
    """The installments as given, or what the down payment leaves of ``planned`` split
    evenly (``equal_installments``)."""
    if grant.installments is not None:
        return [Line(x.due_on, x.amount) for x in grant.installments]
    assert grant.equal_installments is not None  # noqa: S101 - grant() checks one is given
    count, first = grant.equal_installments.count, grant.equal_installments.first_due_on
    rest = planned - (grant.down_payment.amount if grant.down_payment is not None else ZERO)
    if rest <= 0:
        raise ValidationFailed.on(
            "down_payment.amount", f"leaves nothing for the installments of the planned {fmt(planned)}"
        )
    amounts = equal_amounts(rest, count)
    if amounts is None:
        raise ValidationFailed.on(
            "equal_installments.count", f"{count} installments of {fmt(rest)} would be under one cent each"
        )
    return [Line(d, a) for d, a in zip(monthly(first, count), amounts, strict=True)]


async def grant(
    session: AsyncSession,
    *,
    facts: Facts,
    principal: Principal,
    settings: AssessmentSettings,
    grant: PlanCreate,
    today: date,
) -> PaymentPlan:
    """Grant a plan; every check comes before the first write (a refusal changes nothing)."""
    as_of, periods, request_id = grant.as_of or today, grant.periods, grant.request_id
    down = grant.down_payment
    down_payment = Line(down.due_on, down.amount) if down is not None else None
    who = approvals.may_propose(principal, settings)
    if (grant.installments is None) == (grant.equal_installments is None):
        raise ValidationFailed.on("installments", "give the installments or equal_installments (one of them)")
    if as_of > today:
        raise ValidationFailed.on("as_of", "is in the future")
    if request_id is not None:
        req = await session.get(PlanRequest, request_id)
        if req is None or req.tax_account != facts.tax_account:
            raise ValidationFailed.on("request_id", "no plan request of this account with this id")
        if (
            await repository.plan_of_request(session, request_id) is not None
            or (await repository.steps(session, [request_id]))[request_id]
        ):
            raise approvals.conflict("the request was already granted or declined", "#/body/request_id")
    owed = owed_on(facts, as_of)
    if periods is None:
        periods = sorted(owed)
        if not periods:
            raise approvals.conflict(
                f"nothing is owed on {as_of.isoformat()}: no balance to plan", "#/body/as_of"
            )
    for i, p in enumerate(periods):
        if p not in owed:
            raise ValidationFailed.on(f"periods[{i}]", f"{p} owes nothing on {as_of.isoformat()}")
    if len(set(periods)) != len(periods):
        raise ValidationFailed.on("periods", "lists a period twice")
    for i, p in enumerate(periods):
        hold = await cases_service.collection_hold(session, tax_account=facts.tax_account, period=p, on=today)
        if hold is not None:
            raise approvals.conflict(f"{p} cannot be planned: {hold}", f"#/body/periods/{i}")
    for other in await current_plans(session, facts=facts, on=today):
        shared = sorted(set(other.periods) & set(periods))
        if shared:
            raise approvals.conflict(
                f"{', '.join(shared)} already in payment plan {other.id}, current", "#/body/periods"
            )
    planned = sum((owed[p] for p in periods), ZERO)
    installments = _installments(grant, planned)
    _check_schedule(as_of, down_payment, installments, planned)
    grace = law.cited_on(GRACE_DAYS, facts.jurisdiction, today, law=facts.law)
    plan = PaymentPlan(
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        periods=sorted(periods),
        balance_as_of=as_of,
        planned_amount=planned,
        granted_on=today,
        granted_by=f"user:{who}",
        request_id=request_id,
        grace_days=grace.value,
        section=grace.section,
    )
    session.add(plan)
    await session.flush()
    lines = ([down_payment] if down_payment is not None else []) + installments
    first = 0 if down_payment is not None else 1
    rows = [
        PlanInstallment(plan_id=plan.id, number=n, due_on=x.due_on, amount=x.amount)
        for n, x in enumerate(lines, start=first)
    ]
    session.add_all(rows)
    await session.flush()
    await emit(
        session,
        PlanGranted(
            plan_id=plan.id,
            tax_account=plan.tax_account,
            jurisdiction=plan.jurisdiction,
            periods=plan.periods,
            balance_as_of=as_of,
            planned_amount=planned,
            schedule=[InstallmentTerm(number=r.number, due_on=r.due_on, amount=r.amount) for r in rows],
            grace_days=plan.grace_days,
            granted_on=today,
            granted_by=plan.granted_by,
            request_id=request_id,
            section=plan.section,
        ),
        key=facts.tax_account,
        event_id=event_id("plan", plan.id),
    )
    return plan


async def request(
    session: AsyncSession, *, facts: Facts, principal: Principal, ask: PlanRequestCreate, today: date
) -> PlanRequest:
    """The taxpayer's request, to the agency's queue (only while something is owed)."""
    if principal.role != "operator":
        raise Forbidden("the taxpayer (operator) requests a payment plan; the agency grants one directly")
    if not owed_on(facts, today):
        raise approvals.conflict("nothing is owed: no balance to plan", "#/body/installments")
    await accounts_repo.lock_account(session, facts.tax_account)  # two requests at once: one waits
    waiting = await repository.pending_request_of(session, facts.tax_account)
    if waiting is not None:
        # one request per account in the agency's queue: a taxpayer cannot flood it
        raise approvals.conflict(
            f"request {waiting.id} of {waiting.requested_on.isoformat()} still waits for the agency's answer",
            "#/request/status",
        )
    row = PlanRequest(
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        installments=ask.installments,
        explanation=ask.explanation,
        requested_on=today,
        requested_by=principal.actor,
    )
    return await work.add_and_emit(
        session, row, requested_event, key=facts.tax_account, event_key=lambda r: ("plan-request", r.id)
    )


def requested_event(row: PlanRequest) -> PlanRequested:
    return from_row(PlanRequested, row, request_id=row.id)


async def decline(
    session: AsyncSession,
    *,
    req: PlanRequest,
    principal: Principal,
    settings: AssessmentSettings,
    reasons: str,
    today: date,
) -> PlanStep:
    who = f"user:{approvals.may_propose(principal, settings)}"
    if (
        await repository.plan_of_request(session, req.id) is not None
        or (await repository.steps(session, [req.id]))[req.id]
    ):
        raise approvals.conflict("the request was already granted or declined", "#/request/status")
    step = PlanStep(
        subject_id=req.id,
        tax_account=req.tax_account,
        key="declined",
        step="declined",
        on=today,
        by=who,
        details={"reasons": reasons},
    )
    return await work.add_and_emit(
        session,
        step,
        declined_event,
        key=req.tax_account,
        event_key=lambda s: ("plan-request", s.subject_id, "declined"),
    )


def declined_event(step: PlanStep) -> PlanRequestDeclined:
    return from_row(
        PlanRequestDeclined,
        step,
        request_id=step.subject_id,
        declined_on=step.on,
        declined_by=step.by,
        reasons=step.details["reasons"],
    )


async def _step(
    session: AsyncSession, plan: PaymentPlan, key: str, step: str, on: date, details: dict[str, Any]
) -> PlanStep | None:
    """Record a step once (a savepoint: a second run finds the unique key and does nothing)."""
    row = PlanStep(
        subject_id=plan.id,
        tax_account=plan.tax_account,
        key=key,
        step=step,
        on=on,
        by="assessment",
        details=details,
    )
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError:
        return None
    return row


async def _record(
    session: AsyncSession,
    plan: PaymentPlan,
    key: str,
    on: date,
    details: dict[str, Any],
    event: EventData,
) -> PlanStep | None:
    """A step of ``plan`` (named by its key without the numbers) and its event, once."""
    row = await _step(session, plan, key, key.split(":")[0], on, details)
    if row is not None:
        await emit(session, event, key=plan.tax_account, event_id=event_id("plan", plan.id, key))
    return row


@dataclass(frozen=True, slots=True)
class _Recorded:
    """What the steps say of one installment (``installment_paid``/``installment_reopened``) or of
    the plan's completion (``completed``/``reopened``): whether the last says done, how many
    reopenings there were (the cycle the next key is numbered by) and the last step."""

    done: bool
    reopenings: int
    last: PlanStep | None

    @classmethod
    def of(cls, rows: list[PlanStep], done: str, undone: str) -> _Recorded:
        mine = [s for s in rows if s.step in (done, undone)]
        last = mine[-1] if mine else None
        return cls(last is not None and last.step == done, sum(s.step == undone for s in mine), last)

    def later_than(self, on: date) -> bool:
        """The last step is dated after ``on``: it already knows more than the state on ``on``."""
        return self.last is not None and self.last.on > on


def _key(step: str, cycle: int, number: int | None = None) -> str:
    """A step's unique key: ``installment_paid:<n>``, ``completed`` the first time; a step of a
    later cycle (after a reopening) ends in ``:<cycle>``."""
    base = step if number is None else f"{step}:{number}"
    return base if cycle == 0 else f"{base}:{cycle}"


def _installment_steps(rows: list[PlanStep], number: int) -> _Recorded:
    return _Recorded.of(
        [s for s in rows if s.details.get("number") == number], "installment_paid", "installment_reopened"
    )


async def progress(session: AsyncSession, *, facts: Facts, on: date, defaults: bool) -> list[PlanStep]:
    """Record what the account's payments and returned payments did to its plans by ``on``:
    installments paid or unpaid again (reopened), a plan completed or reopened, and
    (``defaults``: the daily job) a plan defaulted, with its notices. A step is recorded only
    where the steps say otherwise than the state on ``on`` and are not dated after it."""
    plans = [p for p in await repository.account_plans(session, facts.tax_account) if p.granted_on <= on]
    schedules = await repository.installments(session, [p.id for p in plans])
    done = await repository.steps(session, [p.id for p in plans])
    made: list[PlanStep] = []
    for plan in plans:
        history = done[plan.id]
        if any(s.step == "defaulted" for s in history):
            continue
        current = state(facts, plan, schedules[plan.id], on)
        for inst in current.installments:
            row = await _installment_step(
                session, facts, plan, inst, _installment_steps(history, inst.term.number), on
            )
            if row is not None:
                made.append(row)
        completion = _Recorded.of(history, "completed", "reopened")
        if current.status == "completed" and not completion.done and current.since is not None:
            row = await _completed(session, plan, current, completion.reopenings)
        elif current.status != "completed" and completion.done and not completion.later_than(on):
            row = await _reopened(session, plan, current, completion.reopenings + 1, on)
        else:
            row = None
        if row is not None:
            made.append(row)
        if defaults and current.status == "defaulted" and current.defaulted_by is not None:
            row = await _default(session, facts, plan, current.defaulted_by.number, on)
            if row is not None:
                made.append(row)
    return made


async def _installment_step(
    session: AsyncSession,
    facts: Facts,
    plan: PaymentPlan,
    inst: InstallmentState,
    recorded: _Recorded,
    on: date,
) -> PlanStep | None:
    """The installment paid (again), or unpaid again by a returned payment, if the steps do not
    say so yet."""
    term, paid = inst.term, inst.status == "paid"
    if recorded.later_than(on) or paid == recorded.done:
        return None
    if paid and inst.paid_on is not None:
        return await _record(
            session,
            plan,
            _key("installment_paid", recorded.reopenings, term.number),
            inst.paid_on,
            {"number": term.number, "amount": fmt(term.amount)},
            PlanInstallmentPaid(
                plan_id=plan.id,
                tax_account=plan.tax_account,
                number=term.number,
                amount=term.amount,
                due_on=term.due_on,
                paid_on=inst.paid_on,
            ),
        )
    if paid or inst.reopened_on is None or recorded.last is None:
        return None
    pay_by = max(term.due_on + timedelta(days=plan.grace_days), inst.reopened_on)
    returned = next((r for r in facts.reversals if r.reversal_id == inst.reopened_by), None)
    payment_id = returned.payment_id if returned is not None else None
    unpaid = term.amount - inst.paid
    return await _record(
        session,
        plan,
        _key("installment_reopened", recorded.reopenings + 1, term.number),
        inst.reopened_on,
        {
            "number": term.number,
            "amount": fmt(term.amount),
            "unpaid": fmt(unpaid),
            "paid_on": recorded.last.on.isoformat(),
            "pay_by": pay_by.isoformat(),
            "reversal_id": inst.reopened_by,
            "payment_id": payment_id,
        },
        PlanInstallmentReopened(
            plan_id=plan.id,
            tax_account=plan.tax_account,
            number=term.number,
            amount=term.amount,
            due_on=term.due_on,
            paid_on=recorded.last.on,
            reopened_on=inst.reopened_on,
            unpaid=unpaid,
            pay_by=pay_by,
            reversal_id=inst.reopened_by,
            payment_id=payment_id,
        ),
    )


async def _completed(
    session: AsyncSession, plan: PaymentPlan, current: PlanState, cycle: int
) -> PlanStep | None:
    assert current.since is not None
    return await _record(
        session,
        plan,
        _key("completed", cycle),
        current.since,
        {"paid": fmt(current.paid)},
        PlanCompleted(
            plan_id=plan.id, tax_account=plan.tax_account, completed_on=current.since, paid=current.paid
        ),
    )


async def _reopened(
    session: AsyncSession, plan: PaymentPlan, current: PlanState, cycle: int, on: date
) -> PlanStep | None:
    """A plan recorded as completed that money returned took below its planned amount."""
    last = current.installments[-1]  # the last filled: unpaid again when the total fell below the plan
    reopened_on, reversal_id = last.reopened_on or on, last.reopened_by
    remaining = plan.planned_amount - current.paid
    return await _record(
        session,
        plan,
        _key("reopened", cycle),
        reopened_on,
        {"paid": fmt(current.paid), "remaining": fmt(remaining), "reversal_id": reversal_id},
        PlanReopened(
            plan_id=plan.id,
            tax_account=plan.tax_account,
            reopened_on=reopened_on,
            paid=current.paid,
            remaining=remaining,
            reversal_id=reversal_id,
        ),
    )


async def _default(
    session: AsyncSession, facts: Facts, plan: PaymentPlan, number: int, on: date
) -> PlanStep | None:
    schedule = (await repository.installments(session, [plan.id]))[plan.id]
    current = state(facts, plan, schedule, on)
    missed = next(i for i in current.installments if i.term.number == number)
    defaulted_on = current.since or on
    step = await _step(
        session,
        plan,
        "defaulted",
        "defaulted",
        defaulted_on,
        {
            "number": number,
            "due_on": missed.term.due_on.isoformat(),
            "unpaid": fmt(missed.term.amount - missed.paid),
        },
    )
    if step is None:
        return None
    notices: list[str] = []
    for period, owed in sorted(owed_on(facts, on).items()):
        if period not in plan.periods or owed <= 0:
            continue
        notice = await issue_notice(
            session,
            facts=facts,
            period=period,
            kind="deficiency",
            reason=f"payment plan {plan.id} defaulted: installment {number} of {fmt(missed.term.amount)} "
            f"due {missed.term.due_on.isoformat()} unpaid after {plan.grace_days} days of grace "
            f"({plan.section}); collection resumes",
            issued_on=on,
            issued_by="assessment",
        )
        if notice is not None:
            notices.append(notice.id)
    step.details = {**step.details, "notice_ids": notices}
    await session.flush()
    await emit(
        session,
        PlanDefaulted(
            plan_id=plan.id,
            tax_account=plan.tax_account,
            defaulted_on=defaulted_on,
            number=number,
            due_on=missed.term.due_on,
            unpaid=missed.term.amount - missed.paid,
            grace_days=plan.grace_days,
            notice_ids=notices,
            section=plan.section,
        ),
        key=plan.tax_account,
        event_id=event_id("plan", plan.id, "defaulted"),
    )
    return step


async def run(session: AsyncSession, *, as_of: date) -> list[PlanStep]:
    """The daily job: every open plan's progress and defaults as of ``as_of`` (before bond draws)."""
    made: list[PlanStep] = []
    for tax_account in await repository.open_plan_accounts(session):
        await accounts_repo.lock_account(session, tax_account)
        facts = await accounts_repo.load_facts(session, tax_account)
        if facts is None:  # pragma: no cover - a plan is only granted on a known account
            continue
        steps = await progress(session, facts=facts, on=as_of, defaults=True)
        made.extend(steps)
        if any(s.step == "defaulted" for s in steps):
            await recompute(session, tax_account=tax_account, facts=facts)
    return made


_WITH_PLANS = "assessment.plans.with_plans"  # session.info: the batch's accounts with plans


async def prepare_batch(session: AsyncSession, *, tax_accounts: Sequence[str]) -> None:
    """Before a consumer's batch of payments: which of its accounts have plans, in one query
    (:func:`on_payment` then asks no more; no plan is granted inside a consumer's transaction)."""
    found = await repository.accounts_with_plans(session, tax_accounts)
    known: set[tuple[str, str]] = accounts_repo.transaction_state(session, _WITH_PLANS, set)
    known.update([("known", a) for a in tax_accounts] + [("plans", a) for a in found])


async def on_payment(session: AsyncSession, *, tax_account: str, on: date) -> None:
    """After a payment or a returned payment (consumer): the installments it paid or unpaid
    again, as of its day (deterministic)."""
    known: set[tuple[str, str]] = accounts_repo.transaction_state(session, _WITH_PLANS, set)
    if ("known", tax_account) in known:
        if ("plans", tax_account) not in known:
            return
    elif not await repository.has_plans(session, tax_account):
        return
    facts = await accounts_repo.load_facts(session, tax_account)
    if facts is not None:
        await progress(session, facts=facts, on=on, defaults=False)


async def get_plan(session: AsyncSession, *, plan_id: str) -> PaymentPlan:
    plan = await session.get(PaymentPlan, plan_id)
    if plan is None:
        raise NotFound(f"no payment plan {plan_id!r}")
    return plan


async def view(session: AsyncSession, *, facts: Facts, plan: PaymentPlan, on: date) -> PlanOut:
    """The plan and its schedule as they stand on ``on``."""
    schedule = (await repository.installments(session, [plan.id]))[plan.id]
    steps = (await repository.steps(session, [plan.id]))[plan.id]
    return PlanOut.of(plan, state(facts, plan, schedule, on), steps, on=on)


async def request_view(session: AsyncSession, *, req: PlanRequest) -> PlanRequestOut:
    return (await request_views(session, reqs=[req]))[0]


async def request_views(session: AsyncSession, *, reqs: Sequence[PlanRequest]) -> list[PlanRequestOut]:
    """Each request as it stands, in two queries whatever their number."""
    ids = [r.id for r in reqs]
    plans = await repository.plans_of_requests(session, ids)
    steps = await repository.steps(session, ids)
    return [
        PlanRequestOut.of(r, plans.get(r.id), next((s for s in steps[r.id] if s.key == "declined"), None))
        for r in reqs
    ]


async def account_request_views(session: AsyncSession, *, tax_account: str) -> list[PlanRequestOut]:
    """The account's plan requests, each as it stands."""
    return await request_views(session, reqs=await repository.account_requests(session, tax_account))


async def queue_views(session: AsyncSession) -> list[PlanRequestOut]:
    """The agency's queue: the oldest requests neither granted nor declined."""
    return await request_views(session, reqs=await repository.pending_requests(session))


async def timeline_entries(session: AsyncSession, *, facts: Facts) -> list[Happened]:
    """The account's plan facts for its timeline."""
    plans = await repository.account_plans(session, facts.tax_account)
    requests = await repository.account_requests(session, facts.tax_account)
    steps = await repository.steps(session, [p.id for p in plans] + [r.id for r in requests])
    schedules = await repository.installments(session, [p.id for p in plans])
    out: list[Happened] = []
    for r in requests:
        out.append(
            Happened.of_row(
                r,
                on=r.requested_on,
                kind="plan.requested",
                subject_id=r.id,
                by=r.requested_by,
                summary=f"payment plan requested in {r.installments} installments",
            )
        )
    for p in plans:
        terms = ", ".join(f"{fmt(i.amount)} due {i.due_on.isoformat()}" for i in schedules[p.id])
        out.append(
            Happened.of_row(
                p,
                on=p.granted_on,
                kind="plan.granted",
                subject_id=p.id,
                by=p.granted_by,
                amount=p.planned_amount,
                section=p.section,
                summary=f"payment plan granted for {', '.join(p.periods)} (balance on "
                f"{p.balance_as_of.isoformat()}): {terms}",
            )
        )
    for subject, rows in steps.items():
        for s in rows:
            amount = s.details.get("amount") or s.details.get("unpaid") or s.details.get("paid")
            out.append(
                Happened.of_row(
                    s,
                    on=s.on,
                    kind=f"plan.{s.step}",
                    subject_id=subject,
                    by=s.by,
                    amount=Decimal(amount) if amount else None,
                    summary=_step_summary(s),
                )
            )
    return out


def _step_summary(s: PlanStep) -> str:
    if s.step == "installment_paid":
        return f"installment {s.details['number']} paid"
    if s.step == "installment_reopened":
        return (
            f"installment {s.details['number']} unpaid again: the payment was returned; "
            f"{s.details['unpaid']} to pay by {s.details['pay_by']}"
        )
    if s.step == "reopened":
        return (
            f"payment plan not completed any more: a payment was returned; {s.details['remaining']} remaining"
        )
    if s.step == "defaulted":
        return (
            f"payment plan defaulted: installment {s.details['number']} due {s.details['due_on']} unpaid; "
            "collection resumes"
        )
    if s.step == "declined":
        return f"payment plan request declined: {s.details['reasons']}"
    return "payment plan completed"
