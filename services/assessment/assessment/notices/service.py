"""Deficiency notices (PR §2(25) "Notification", §33), responses (§34) and lapses (§33 bond)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from assessment import law
from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts, account_state, period_statements
from assessment.cases import service as cases_service
from assessment.casework import repository as casework_repo
from assessment.models import BondDrawRequest, BondDrawView, BondView, Notice, NoticeResponse
from assessment.notices import repository
from assessment.plans.hold import plan_hold
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.outbox import emit
from taxcore.events.assessment import BondDrawRequested, NoticeIssued
from taxcore.money import ZERO, fmt
from taxcore.notices import notice_terms
from taxcore.parameters import ParameterTree
from taxcore.rules.balance import Balance

BOND_REQUEST_NAMESPACE = uuid.UUID("0b6f3b7c-3f4e-4f0e-9b61-8a2d6f4c2e55")


def period_balance(facts: Facts, period: str, on: date) -> Balance | None:
    state = account_state(facts, on)
    if period not in state.periods:
        return None
    for st in period_statements(state, on, explain=False):
        if st.basis.period == period:
            return st.balance
    return None  # pragma: no cover


async def issue_notice(
    session: AsyncSession,
    *,
    facts: Facts,
    period: str,
    kind: str,
    reason: str,
    issued_on: date,
    issued_by: str,
    source_declaration_id: str | None = None,
) -> Notice | None:
    """Notify the deficiency of one period: what is owed of each component on ``issued_on``.

    A Deficiency is the Debt (tax plus fines, penalties, surcharges, interest)
    minus what was paid (PR §2(15)-(16)). Returns None for an automatic notice
    when nothing is owed; a requested one raises instead.
    """
    bal = period_balance(facts, period, issued_on)
    if bal is None:
        raise ValidationFailed.on("period", f"the account has no liability for {period} on {issued_on}")
    if bal.balance <= 0:
        if source_declaration_id is not None:
            return None
        raise Conflict(f"nothing is owed for {period} on {issued_on.isoformat()}: no deficiency to notify")
    hold = await plan_hold(session, facts, period, issued_on)
    if hold is not None:  # a current payment plan: no new notice for its periods
        if source_declaration_id is not None:
            return None
        detail = f"{period}: {hold}; no notice is issued for its periods while it is"
        raise Conflict(detail, errors=[{"pointer": "#/body/period", "detail": detail}])
    out = {c.component: c.outstanding for c in bal.components}
    term = law.cited(law.NOTICE_RESPONSE_DAYS, facts.jurisdiction, law=facts.law)
    section = (
        law.CLERICAL_ASSESSMENT_SECTION.of(facts.law, facts.jurisdiction)
        if kind == "clerical_error"
        else law.NOTICE_SECTION.of(facts.law, facts.jurisdiction)
    )
    notice = Notice(
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        period=period,
        kind=kind,
        reason=reason,
        section=section,
        issued_on=issued_on,
        response_deadline=issued_on + timedelta(days=term.value),
        tax=out["tax"],
        impact_fee=out["impact_fee"],
        penalty=out["penalty"],
        interest=out["interest"],
        fine=out["fine"],
        total=bal.balance,
        source_declaration_id=source_declaration_id,
        issued_by=issued_by,
    )
    session.add(notice)
    await session.flush()
    facts.notices.append(notice)
    await emit(
        session,
        NoticeIssued(
            notice_id=notice.id,
            tax_account=notice.tax_account,
            jurisdiction=notice.jurisdiction,
            period=period,
            kind=kind,
            reason=reason,
            issued_on=issued_on,
            response_deadline=notice.response_deadline,
            tax=notice.tax,
            impact_fee=notice.impact_fee,
            penalty=notice.penalty,
            interest=notice.interest,
            fine=notice.fine,
            total=notice.total,
            section=section,
        ),
        key=facts.tax_account,
    )
    return notice


@dataclass(frozen=True, slots=True)
class NoticeStanding:
    """Where a notice stands on a date: its status, what is still owed for its period, the
    taxpayer's responses by then and the bond draw requested for it."""

    status: str
    balance: Decimal
    responses: list[NoticeResponse]
    draw_request: BondDrawRequest | None

    def shown_with(self, decided: cases_service.NoticeDecision | None) -> str:
        """A decided dispute shows what the case decided, not "disputed" for ever (a paid
        notice whose case cancelled it shows "cancelled")."""
        if decided is not None and (
            self.status == "disputed" or (self.status == "paid" and decided.status == "cancelled")
        ):
            return decided.status
        return self.status


async def status_of(session: AsyncSession, *, facts: Facts, notice: Notice, on: date) -> NoticeStanding:
    responses = [r for r in await repository.responses_of(session, notice.id) if r.responded_on <= on]
    request = await repository.draw_request(session, notice.id)
    bal = period_balance(facts, notice.period, on)
    owed = bal.balance if bal is not None else ZERO
    last = responses[-1].kind if responses else None
    if owed <= 0:
        status = "paid"
    elif request is not None and request.requested_on <= on:
        status = "bond_draw_requested"
    elif last == "dispute":
        status = "disputed"
    elif last == "accept":
        status = "accepted" if on <= notice.response_deadline else "lapsed"
    elif on > notice.response_deadline:
        status = "lapsed"
    else:
        status = "open"
    return NoticeStanding(status=status, balance=owed, responses=responses, draw_request=request)


async def respond(
    session: AsyncSession,
    *,
    facts: Facts,
    notice: Notice,
    kind: str,
    disputed_amount: Decimal,
    statement: str | None,
    responded_on: date,
    responder: str,
    today: date,
) -> NoticeResponse:
    """Accept the notice, or dispute part of it, having paid the undisputed part where the
    jurisdiction requires it (PR §34: ``assessment.partial_dispute_prepay`` and its
    ``assessment.partial_dispute_section``; VI: no such rule)."""
    if responded_on < notice.issued_on:
        raise ValidationFailed.on("responded_on", "is before the notice was issued")
    if responded_on > today:
        raise ValidationFailed.on("responded_on", "is in the future")
    if responded_on > notice.response_deadline:
        raise Conflict(
            f"the term to answer ended on {notice.response_deadline.isoformat()}",
            errors=[{"pointer": "#/body/responded_on", "detail": "after the response deadline"}],
        )
    previous = await repository.responses_of(session, notice.id)
    if previous:
        raise Conflict(f"the notice was already answered ({previous[-1].kind})")
    if kind == "accept":
        disputed_amount = ZERO
    else:
        if disputed_amount <= 0 or disputed_amount > notice.total:
            raise ValidationFailed.on(
                "disputed_amount", f"must be more than 0 and at most the notice total {fmt(notice.total)}"
            )
        undisputed = notice.total - disputed_amount
        before = period_balance(facts, notice.period, notice.issued_on)
        after = period_balance(facts, notice.period, responded_on)
        paid_since = (after.total_paid if after else ZERO) - (before.total_paid if before else ZERO)
        # only where the jurisdiction's own law asks for it (PR §34; none in VI §54)
        prepay = notice_terms(
            notice.jurisdiction, notice.issued_on, parameters=facts.law
        ).partial_dispute_section
        if prepay is not None and paid_since < undisputed:
            raise ValidationFailed.on(
                "disputed_amount",
                f"{prepay}: pay the undisputed {fmt(undisputed)} before disputing the rest "
                f"({fmt(paid_since)} paid since the notice)",
            )
    response = NoticeResponse(
        notice_id=notice.id,
        kind=kind,
        disputed_amount=disputed_amount,
        undisputed_amount=notice.total - disputed_amount,
        statement=statement,
        responded_on=responded_on,
        responder=responder,
    )
    session.add(response)
    await session.flush()
    return response


def _bond_remaining(bond: BondView, draws: list[BondDrawView]) -> Decimal:
    return bond.amount - sum((d.amount for d in draws if d.bond_id == bond.bond_id), ZERO)


async def request_lapsed_draws(
    session: AsyncSession, *, as_of: date, law: ParameterTree
) -> list[BondDrawRequest]:
    """PR §33: for each notice whose term lapsed unpaid and undisputed, ask the registry to draw the bond.

    Once per notice (the request row's primary key is the notice id, and the
    event id is derived from it, so the registry records one draw however
    often this runs).
    """
    made: list[BondDrawRequest] = []
    for notice in await repository.lapsed_without_request(session, as_of):
        draw_section = notice_terms(notice.jurisdiction, notice.issued_on, parameters=law).bond_draw_section
        if draw_section is None:  # bonds are not required there (VI): nothing to draw on
            continue
        responses = [r for r in await repository.responses_of(session, notice.id) if r.responded_on <= as_of]
        if responses and responses[-1].kind == "dispute" and await _dispute_holds(session, notice, as_of):
            continue
        if await cases_service.collection_hold(
            session, tax_account=notice.tax_account, period=notice.period, on=as_of
        ):
            continue  # an undecided case, an appeal or its term, a write-off: collection waits
        await accounts_repo.lock_account(session, notice.tax_account)
        facts = await accounts_repo.load_facts(session, notice.tax_account)
        if facts is None:  # pragma: no cover
            continue
        bal = period_balance(facts, notice.period, as_of)
        if bal is None or bal.balance <= 0:
            continue
        if await plan_hold(session, facts, notice.period, as_of) is not None:
            continue  # a current payment plan: no bond draw for its periods
        bonds = await repository.active_bonds_on(session, notice.tax_account, as_of)
        draws = await repository.draws_of(session, notice.tax_account)
        bond = next((b for b in bonds if _bond_remaining(b, draws) > 0), None)
        if bond is None:
            continue
        amount = min(bal.balance, _bond_remaining(bond, draws))
        event_id = str(uuid.uuid5(BOND_REQUEST_NAMESPACE, notice.id))
        request = BondDrawRequest(
            notice_id=notice.id,
            event_id=event_id,
            tax_account=notice.tax_account,
            period=notice.period,
            bond_id=bond.bond_id,
            amount=amount,
            requested_on=as_of,
        )
        session.add(request)
        await session.flush()
        await emit(
            session,
            BondDrawRequested(
                notice_id=notice.id,
                tax_account=notice.tax_account,
                period=notice.period,
                amount=amount,
                requested_on=as_of,
                reason=f"deficiency notice of {notice.issued_on.isoformat()} unpaid after its term "
                f"({notice.response_deadline.isoformat()}); "
                f"{draw_section}",
            ),
            key=notice.tax_account,
            event_id=event_id,
        )
        made.append(request)
    return made


async def _dispute_holds(session: AsyncSession, notice: Notice, on: date) -> bool:
    """A disputed notice waits for its case's decision (and appeal term); without a case it waits."""
    case = await casework_repo.case_of_notice(session, notice.id)
    if case is None:
        return True
    current = await cases_service.view(session, case=case, on=on)
    return current.decision is None


async def get_notice(session: AsyncSession, *, notice_id: str) -> Notice:
    notice = await repository.notice(session, notice_id)
    if notice is None:
        raise NotFound(f"no notice {notice_id!r}")
    return notice
