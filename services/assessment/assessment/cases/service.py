"""Cases: a disputed deficiency notice from filing to decision and appeal.

PR §13-§15 (complaints, adjudicative proceedings, due process under Act 170-1988)
and §34 (disputes, past the end of our text); VI §54(d) (33 V.I.C. § 45, not in
our files). The timeline is append-only steps::

    filed -> under_review -> [hearing_scheduled ...] -> [decision_proposed] -> decided
          -> [appealed -> appeal_resolved]

A dispute opens its case. ``sustain`` lowers nothing and is decided by one agency
person; ``reduce`` (each component to an amount) and ``cancel`` are proposed by one
person and approved by another (maker-checker): on approval they become adjustment
facts effective on the decision date, and taxcore recomputes penalties and interest.
While a case is undecided, its appeal term runs, or an appeal is pending, collection
actions on the period (the bond draw) wait.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts
from assessment.cases.schemas import AppealResolution, CaseOut, DecisionCreate, HearingCreate, HoldReason
from assessment.casework import approvals, law, repository
from assessment.casework import facts as adjustments
from assessment.casework.events import event_id
from assessment.casework.facts import balances_on
from assessment.casework.models import AdjustmentFact, Case, CaseStep, Proposal, ProposalReview
from assessment.models import Notice, NoticeResponse
from assessment.settings import AssessmentSettings
from servicekit.auth import Principal
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.outbox import emit
from taxcore.events.cases import CaseStepRecorded
from taxcore.money import ZERO, fmt
from taxcore.parameters import ParameterTree

DECIDABLE = ("under_review", "hearing_scheduled")
REDUCIBLE = ("tax", "impact_fee", "fine")
_STATUS = {
    "filed": "filed",
    "under_review": "under_review",
    "hearing_scheduled": "hearing_scheduled",
    "decision_proposed": "decision_proposed",
    "decided": "decided",
    "appealed": "under_appeal",
    "appeal_decision_proposed": "under_appeal",
    "appeal_resolved": "closed",
}


@dataclass
class CaseView:
    case: Case
    steps: list[CaseStep]
    status: str
    decision: CaseStep | None
    pending: Proposal | None


def _conflict(detail: str, pointer: str = "#/case/status") -> Conflict:
    return approvals.conflict(detail, pointer)


#: steps whose status depends on their proposal's review (a rejected one is passed over)
_REVIEWED_STEPS = ("decision_proposed", "appeal_decision_proposed")


def steps_never_in(statuses: Collection[str]) -> frozenset[str]:
    """The steps that, as a case's latest, give it a status outside ``statuses`` whatever was
    reviewed (:func:`view`): a query may leave those cases out before looking closer."""
    return frozenset(
        step for step, status in _STATUS.items() if status not in statuses and step not in _REVIEWED_STEPS
    )


async def view(session: AsyncSession, *, case: Case, on: date) -> CaseView:
    """The case as of ``on`` (the caller's today, or an earlier day): its steps, status, decision
    and pending proposal."""
    steps = [s for s in await repository.steps_of(session, case.id) if s.on <= on]
    proposals = [
        p
        for p in await repository.proposals_of(session, case.id)
        if p.action in ("case.decide", "case.appeal_decide")
    ]
    reviews = await repository.reviews_of(session, [p.id for p in proposals])
    pending = next((p for p in proposals if p.id not in reviews), None)
    status = "filed"
    decision: CaseStep | None = None
    for s in steps:
        if s.step in _REVIEWED_STEPS:
            review = reviews.get(str(s.details.get("proposal_id")))
            if review is not None and review.outcome == "rejected":
                continue  # a rejected proposal leaves the case where it was
        status = _STATUS[s.step]
        if s.step == "decided":
            decision = s
    return CaseView(case, steps, status, decision, pending)


async def add_step(
    session: AsyncSession,
    *,
    case: Case,
    step: str,
    on: date,
    by: str,
    details: dict[str, Any],
) -> CaseStep:
    row = CaseStep(case_id=case.id, tax_account=case.tax_account, step=step, on=on, by=by, details=details)
    session.add(row)
    await session.flush()
    replacing = details.get("decision") or {}
    amounts = {k: Decimal(v) for k, v in (details.get("amounts") or replacing.get("amounts") or {}).items()}
    await emit(
        session,
        CaseStepRecorded(
            case_id=case.id,
            step_id=row.id,
            tax_account=case.tax_account,
            jurisdiction=case.jurisdiction,
            period=case.period,
            notice_id=case.notice_id,
            step=step,
            on=on,
            by=by,
            hearing_on=details.get("hearing_on"),
            hearing_place=details.get("place"),
            video_link=details.get("video_link"),
            outcome=details.get("outcome"),
            reasons=details.get("reasons"),
            amounts=amounts,
            appeal_deadline=details.get("appeal_deadline"),
            new_outcome=replacing.get("outcome"),
            section=law.section(case.jurisdiction, "decision", on, law=accounts_repo.law_of(session)),
        ),
        key=case.tax_account,
        event_id=event_id("case-step", row.id),
    )
    return row


async def open_case(
    session: AsyncSession, *, facts: Facts, notice: Notice, response: NoticeResponse, by: str
) -> Case:
    """A dispute of a notice opens its case (once: one case per notice)."""
    found = await repository.case_of_notice(session, notice.id)
    if found is not None:
        return found
    case = Case(
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        period=notice.period,
        notice_id=notice.id,
        response_id=response.id,
        disputed_amount=response.disputed_amount,
        opened_on=response.responded_on,
        opened_by=by,
    )
    session.add(case)
    await session.flush()
    await add_step(
        session,
        case=case,
        step="filed",
        on=response.responded_on,
        by=by,
        details={"disputed_amount": fmt(response.disputed_amount), "statement": response.statement},
    )
    return case


async def start_review(
    session: AsyncSession, *, case: Case, principal: Principal, settings: AssessmentSettings, today: date
) -> CaseStep:
    who = approvals.may_propose(principal, settings)
    current = await view(session, case=case, on=today)
    if current.status != "filed":
        raise _conflict(f"the case is {current.status}, not filed: its review has started already")
    return await add_step(session, case=case, step="under_review", on=today, by=f"user:{who}", details={})


async def schedule_hearing(
    session: AsyncSession,
    *,
    case: Case,
    principal: Principal,
    settings: AssessmentSettings,
    hearing: HearingCreate,
    today: date,
) -> CaseStep:
    """Schedule (or move) the hearing: a place, a video link or both, not in the past."""
    hearing_on, place, video_link = hearing.hearing_on, hearing.place, hearing.video_link
    who = approvals.may_propose(principal, settings)
    current = await view(session, case=case, on=today)
    if current.status not in DECIDABLE:
        raise _conflict(f"the case is {current.status}: a hearing is scheduled while it is under review")
    if hearing_on < today:
        raise ValidationFailed.on("hearing_on", "is in the past")
    if not (place or video_link):
        raise ValidationFailed.on("place", "give the place of the hearing or a video link")
    details = {"hearing_on": hearing_on.isoformat(), "place": place, "video_link": video_link}
    return await add_step(
        session, case=case, step="hearing_scheduled", on=today, by=f"user:{who}", details=details
    )


def _decision_rows(
    case: Case,
    *,
    outcome: str,
    amounts: dict[str, Decimal],
    reasons: str,
    on: date,
    proposed_by: str | None,
    approved_by: str,
    tree: ParameterTree,
) -> list[AdjustmentFact]:
    section = law.section(case.jurisdiction, "decision", on, law=tree)
    common: dict[str, Any] = {
        "tax_account": case.tax_account,
        "jurisdiction": case.jurisdiction,
        "period": case.period,
        "effective_on": on,
        "section": section,
        "reason": reasons,
        "proposed_by": proposed_by,
        "approved_by": approved_by,
        "source_kind": "case",
        "source_id": case.id,
    }
    if outcome == "cancel":
        return [AdjustmentFact(kind="cancel", component=None, amount=None, **common)]
    return [
        AdjustmentFact(kind="reduce", component=c, amount=a, **common) for c, a in sorted(amounts.items())
    ]


def _owed(facts: Facts, period: str, on: date) -> Decimal:
    bal = balances_on(facts, period, on)
    return bal.balance if bal is not None else ZERO


def _lowering(
    facts: Facts,
    case: Case,
    *,
    outcome: str,
    amounts: dict[str, Decimal],
    reasons: str,
    on: date,
    who: str,
    field: str = "amounts",
) -> Decimal:
    """Check a reduce/cancel decision and say how much it would lower what is owed on ``on``
    (a trial of its facts, removed again): the maker-checker threshold applies to that."""
    if outcome == "reduce":
        if not amounts:
            raise ValidationFailed.on(field, "say the amount each reduced component is reduced to")
        bal = balances_on(facts, case.period, on)
        assessed = {c.component: c.assessed for c in bal.components} if bal else {}
        for component, amount in amounts.items():
            if component not in REDUCIBLE:
                raise ValidationFailed.on(f"{field}.{component}", f"a decision reduces one of {REDUCIBLE}")
            if amount >= assessed.get(component, ZERO):
                was = fmt(assessed.get(component, ZERO))
                raise ValidationFailed.on(
                    f"{field}.{component}", f"{fmt(amount)} does not reduce the {component} assessed ({was})"
                )
    before = _owed(facts, case.period, on)
    trial = _decision_rows(
        case,
        outcome=outcome,
        amounts=amounts,
        reasons=reasons,
        on=on,
        proposed_by=who,
        approved_by=who,
        tree=facts.law,
    )
    for row in trial:
        row.id = f"trial-{row.component or row.kind}"
    facts.adjustments.extend(trial)
    try:
        adjustments.check(facts, {case.period}, {on}, field=field)
        return max(ZERO, before - _owed(facts, case.period, on))
    finally:
        del facts.adjustments[-len(trial) :]


async def propose_decision(
    session: AsyncSession,
    *,
    case: Case,
    facts: Facts,
    principal: Principal,
    settings: AssessmentSettings,
    decision: DecisionCreate,
    today: date,
) -> CaseView:
    """Sustain (decided now), or propose reduce/cancel for a second person's approval."""
    outcome, amounts, reasons = decision.outcome, dict(decision.amounts), decision.reasons
    who = approvals.may_propose(principal, settings)
    current = await view(session, case=case, on=today)
    if current.decision is not None:
        raise _conflict("the case is already decided")
    if current.pending is not None:
        raise _conflict(f"decision proposal {current.pending.id} is awaiting review")
    if current.status not in DECIDABLE:
        raise _conflict(f"the case is {current.status}: it is decided once under review")
    if outcome in ("sustain", "cancel") and amounts:
        raise ValidationFailed.on("amounts", f"a decision to {outcome} takes no amounts")
    if outcome == "sustain":
        await _decided(session, case, outcome="sustain", amounts={}, reasons=reasons, on=today, by=who)
        return await view(session, case=case, on=today)
    lowered = _lowering(facts, case, outcome=outcome, amounts=amounts, reasons=reasons, on=today, who=who)
    proposal = await approvals.propose(
        session,
        tax_account=case.tax_account,
        period=case.period,
        action="case.decide",
        subject_id=case.id,
        amount=lowered,
        payload={"outcome": outcome, "amounts": {k: fmt(v) for k, v in amounts.items()}, "reasons": reasons},
        principal=principal,
        settings=settings,
        today=today,
    )
    await add_step(
        session,
        case=case,
        step="decision_proposed",
        on=today,
        by=f"user:{who}",
        details={
            "proposal_id": proposal.id,
            "outcome": outcome,
            "amounts": {k: fmt(v) for k, v in amounts.items()},
            "reasons": reasons,
            "lowers_by": fmt(lowered),
        },
    )
    return await view(session, case=case, on=today)


async def _decided(
    session: AsyncSession,
    case: Case,
    *,
    outcome: str,
    amounts: dict[str, Decimal],
    reasons: str,
    on: date,
    by: str,
    proposed_by: str | None = None,
    proposal_id: str | None = None,
) -> CaseStep:
    term = law.appeal_days(case.jurisdiction, on, law=accounts_repo.law_of(session))
    return await add_step(
        session,
        case=case,
        step="decided",
        on=on,
        by=f"user:{by}",
        details={
            "outcome": outcome,
            "amounts": {k: fmt(v) for k, v in amounts.items()},
            "reasons": reasons,
            "decided_by": by,
            "proposed_by": proposed_by,
            "proposal_id": proposal_id,
            "appeal_deadline": (on + timedelta(days=term.value)).isoformat(),
            "appeal_term": {"days": term.value, "section": term.section, "provisional": term.provisional},
        },
    )


async def _record_approved(
    session: AsyncSession, proposal: Proposal, review: ProposalReview, *, appeal: bool, field: str
) -> tuple[Case, str, dict[str, Decimal], str]:
    """Record an approved decision's facts (the first, or the new one on appeal), effective on
    the approval date; refused when the case moved on since it was proposed."""
    case = await session.get(Case, proposal.subject_id)
    if case is None:  # pragma: no cover - proposals are made for existing cases
        raise NotFound(f"no case {proposal.subject_id!r}")
    current = await view(session, case=case, on=review.reviewed_on)
    if appeal and current.status != "under_appeal":
        raise _conflict(f"the case is {current.status}: no appeal is pending")
    if not appeal and current.decision is not None:
        raise _conflict("the case is already decided")
    facts = await accounts_repo.load_facts(session, case.tax_account)
    assert facts is not None
    outcome = str(proposal.payload["outcome"])
    amounts = {k: Decimal(v) for k, v in proposal.payload.get("amounts", {}).items()}
    reasons = str(proposal.payload["reasons"])
    rows = _decision_rows(
        case,
        outcome=outcome,
        amounts=amounts,
        reasons=reasons,
        on=review.reviewed_on,
        proposed_by=proposal.proposed_by,
        approved_by=review.reviewed_by,
        tree=facts.law,
    )
    await adjustments.record(session, facts, rows, field=field)
    return case, outcome, amounts, reasons


@approvals.executor("case.decide")
async def _execute_decision(session: AsyncSession, proposal: Proposal, review: ProposalReview) -> None:
    case, outcome, amounts, reasons = await _record_approved(
        session, proposal, review, appeal=False, field="amounts"
    )
    await _decided(
        session,
        case,
        outcome=outcome,
        amounts=amounts,
        reasons=reasons,
        on=review.reviewed_on,
        by=review.reviewed_by,
        proposed_by=proposal.proposed_by,
        proposal_id=proposal.id,
    )


async def appeal(
    session: AsyncSession, *, case: Case, principal: Principal, filed_on: date, grounds: str, today: date
) -> CaseStep:
    """An appeal against the decision (the taxpayer, or the agency on its behalf), within the term."""
    if not (principal.role == "operator" or principal.can_write_all):
        raise Forbidden("the taxpayer (operator) or an agency administrator records an appeal")
    current = await view(session, case=case, on=today)
    if current.status == "under_appeal":
        raise _conflict("the decision is already under appeal")
    if current.decision is None or current.status != "decided":
        raise _conflict(f"the case is {current.status}: only a decision is appealed")
    deadline = date.fromisoformat(str(current.decision.details["appeal_deadline"]))
    if filed_on > today:
        raise ValidationFailed.on("filed_on", "is in the future")
    if filed_on < current.decision.on:
        raise ValidationFailed.on("filed_on", "is before the decision")
    if filed_on > deadline:
        raise _conflict(f"the term to appeal ended on {deadline.isoformat()}", "#/body/filed_on")
    return await add_step(
        session, case=case, step="appealed", on=filed_on, by=principal.actor, details={"grounds": grounds}
    )


async def resolve_appeal(
    session: AsyncSession,
    *,
    case: Case,
    facts: Facts,
    principal: Principal,
    settings: AssessmentSettings,
    resolution: AppealResolution,
    today: date,
) -> CaseStep:
    """Upheld or withdrawn: the decision stands, the case closes. Replaced: a new decision
    (reduce/cancel) on the appeal, proposed by one agency person for another's approval; on
    approval its facts count from the resolution date and the latest decision wins per
    component (taxcore), so a statement dated before the resolution keeps the first decision."""
    outcome, reasons = resolution.outcome, resolution.reasons
    decision = resolution.decision.model_dump(mode="json") if resolution.decision is not None else None
    who = approvals.may_propose(principal, settings)
    current = await view(session, case=case, on=today)
    if current.status != "under_appeal":
        raise _conflict(f"the case is {current.status}: no appeal is pending")
    if current.pending is not None:
        raise _conflict(f"proposal {current.pending.id} is awaiting review")
    if outcome != "replaced":
        if decision is not None:
            raise ValidationFailed.on("decision", f"an appeal {outcome} takes no new decision")
        return await add_step(
            session,
            case=case,
            step="appeal_resolved",
            on=today,
            by=f"user:{who}",
            details={"outcome": outcome, "reasons": reasons},
        )
    if decision is None:
        raise ValidationFailed.on("decision", "say the new decision that replaces the appealed one")
    new_outcome = str(decision["outcome"])
    amounts = {k: Decimal(v) for k, v in decision.get("amounts", {}).items()}
    if new_outcome == "cancel" and amounts:
        raise ValidationFailed.on("decision.amounts", "a decision to cancel takes no amounts")
    lowered = _lowering(
        facts,
        case,
        outcome=new_outcome,
        amounts=amounts,
        reasons=reasons,
        on=today,
        who=who,
        field="decision.amounts",
    )
    payload = {"outcome": new_outcome, "amounts": {k: fmt(v) for k, v in amounts.items()}, "reasons": reasons}
    proposal = await approvals.propose(
        session,
        tax_account=case.tax_account,
        period=case.period,
        action="case.appeal_decide",
        subject_id=case.id,
        amount=lowered,
        payload=payload,
        principal=principal,
        settings=settings,
        today=today,
    )
    return await add_step(
        session,
        case=case,
        step="appeal_decision_proposed",
        on=today,
        by=f"user:{who}",
        details={"proposal_id": proposal.id, **payload, "lowers_by": fmt(lowered)},
    )


@approvals.executor("case.appeal_decide")
async def _execute_appeal_decision(session: AsyncSession, proposal: Proposal, review: ProposalReview) -> None:
    case, outcome, amounts, reasons = await _record_approved(
        session, proposal, review, appeal=True, field="decision.amounts"
    )
    await add_step(
        session,
        case=case,
        step="appeal_resolved",
        on=review.reviewed_on,
        by=f"user:{review.reviewed_by}",
        details={
            "outcome": "replaced",
            "reasons": reasons,
            "decision": {"outcome": outcome, "amounts": {k: fmt(v) for k, v in amounts.items()}},
            "decided_by": review.reviewed_by,
            "proposed_by": proposal.proposed_by,
            "proposal_id": proposal.id,
        },
    )


@dataclass(frozen=True)
class Hold:
    """Why collection waits: a stable ``code`` (``under_appeal``, ``not_decided``,
    ``appeal_term``, ``written_off``) with its values, and the English text."""

    code: str
    case_id: str | None
    since_or_until: date | None
    text: str


async def hold_of(session: AsyncSession, *, tax_account: str, period: str, on: date) -> Hold | None:
    """Why collection actions (a bond draw) on the period must wait on ``on``, or None."""
    for case in await repository.account_cases(session, tax_account):
        if case.period != period or case.opened_on > on:
            continue
        current = await view(session, case=case, on=on)
        if current.status == "under_appeal":
            return Hold("under_appeal", case.id, None, f"case {case.id}: the decision is under appeal")
        if current.decision is None:
            return Hold("not_decided", case.id, None, f"case {case.id}: the dispute is not decided")
        if current.status == "decided":
            deadline = date.fromisoformat(str(current.decision.details["appeal_deadline"]))
            if on <= deadline:
                text = f"case {case.id}: the term to appeal runs until {deadline.isoformat()}"
                return Hold("appeal_term", case.id, deadline, text)
    for fact in await repository.account_facts(session, tax_account):
        if fact.period == period and fact.kind == "write_off" and fact.effective_on <= on:
            reversal = await repository.reversal_of(session, fact.id)
            if reversal is None or reversal.reversed_on > on:
                text = f"written off from {fact.effective_on.isoformat()}"
                return Hold("written_off", None, fact.effective_on, text)
    return None


async def collection_hold(session: AsyncSession, *, tax_account: str, period: str, on: date) -> str | None:
    """Why collection actions (a bond draw) on the period must wait on ``on``, or None."""
    hold = await hold_of(session, tax_account=tax_account, period=period, on=on)
    return hold.text if hold else None


async def shown(session: AsyncSession, *, current: CaseView, on: date) -> CaseOut:
    """The case as the API shows it on ``on``, with why collection on its period waits (the
    text, and its code with its values for clients to translate by)."""
    case = current.case
    hold = await hold_of(session, tax_account=case.tax_account, period=case.period, on=on)
    reason = None
    if hold is not None:
        values = {"code": hold.code, "case_id": hold.case_id, "on": hold.since_or_until}
        reason = HoldReason.model_validate(values)
    return CaseOut.of(current, collection_hold=hold.text if hold else None, collection_hold_reason=reason)


#: a disputed notice's status once its case is decided (the appeal's new decision wins)
NOTICE_OUTCOME = {"sustain": "sustained", "reduce": "reduced", "cancel": "cancelled"}


@dataclass(frozen=True, slots=True)
class NoticeDecision:
    """What the case a disputed notice opened decided (the appeal's new decision wins)."""

    status: str  # the notice's status it gives: sustained, reduced, cancelled
    case: Case
    case_status: str
    outcome: str
    decided_on: date
    appeal_deadline: date


async def notice_outcome(session: AsyncSession, *, notice_id: str, on: date) -> NoticeDecision | None:
    """What the case opened by a disputed notice decided, as of ``on`` (None: no case, or not
    decided yet): the notice shows the outcome instead of "disputed"."""
    case = await repository.case_of_notice(session, notice_id)
    if case is None:
        return None
    current = await view(session, case=case, on=on)
    if current.decision is None:
        return None
    outcome = str(current.decision.details["outcome"])
    resolved = next((s for s in reversed(current.steps) if s.step == "appeal_resolved"), None)
    if resolved is not None and resolved.details.get("outcome") == "replaced":
        outcome = str(resolved.details["decision"]["outcome"])
    return NoticeDecision(
        status=NOTICE_OUTCOME[outcome],
        case=case,
        case_status=current.status,
        outcome=outcome,
        decided_on=current.decision.on,
        appeal_deadline=date.fromisoformat(str(current.decision.details["appeal_deadline"])),
    )
