"""The e-mails some events call for: each letter reads its contract and queues the
message through :mod:`notify.mail.service` (keyed ``<kind>:<event id>``, so a redelivery
queues nothing new).

A letter is a function from the parsed event and a language to what the message says
beyond the lodging, the account and (when the event names one) the period;
:func:`letter` makes it the event's handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from notify.mail import service, texts
from notify.settings import NotifySettings
from taxcore.events import CloudEvent, EventData
from taxcore.events import assessment as ae
from taxcore.events import cases as ce
from taxcore.events import compliance as co
from taxcore.events import plans as pe

DECISION_STEPS = frozenset({"decided", "appeal_resolved"})
#: the audit steps the taxpayer is written to about (opening and findings are the agency's
#: work; the records request, the notice of audit assessment and the closing reach them)
AUDIT_LETTERS = frozenset({"records_requested", "notice", "closed"})

Mail = Callable[[AsyncSession, CloudEvent], Awaitable[None]]


class _AboutAnAccount(Protocol):
    @property
    def tax_account(self) -> str: ...


E = TypeVar("E", bound=EventData)


def letter(
    contract: type[E],
    kind: Callable[[E], str | None],
    *,
    period: Callable[[E], str | None] = lambda _: None,
    document: bool = True,
) -> Callable[[Callable[[E, str], dict[str, str]]], Callable[[NotifySettings], Mail]]:
    """The handler that queues ``kind(event)`` (None: this event calls for no letter) to the
    lodging's operator, in its language. ``document``: the e-mail stands for an official
    document (it says the PDF is not attached and where it is)."""

    def wrap(fields: Callable[[E, str], dict[str, str]]) -> Callable[[NotifySettings], Mail]:
        def bound(settings: NotifySettings) -> Mail:
            async def handle(session: AsyncSession, event: CloudEvent) -> None:
                data = contract.model_validate(event.data)
                name = kind(data)
                if name is None:
                    return
                about: _AboutAnAccount = data  # type: ignore[assignment]
                account, on = about.tax_account, period(data)
                lodging, to = await service.lodging_and_operator(session, tax_account=account)
                await service.queue(
                    session,
                    key=f"{name}:{event.id}",
                    kind=name,
                    to=to,
                    fields={
                        "lodging": lodging.name if lodging else account,
                        "account": account,
                        **({"period": on} if on else {}),
                        **fields(data, to.language),
                    },
                    settings=settings,
                    tax_account=account,
                    period=on,
                    document=document,
                )

            return handle

        return bound

    return wrap


# --------------------------------------------------------------------------- notices and cases


@letter(ae.NoticeIssued, lambda _: "notice", period=lambda n: n.period)
def on_notice(notice: ae.NoticeIssued, lang: str) -> dict[str, str]:
    return {
        "kind": texts.word(lang, notice.kind),
        "issued_on": texts.day(notice.issued_on, lang),
        "reason": notice.reason,
        "deadline": texts.day(notice.response_deadline, lang),
        **{
            k: texts.money(getattr(notice, k), lang)
            for k in ("tax", "impact_fee", "penalty", "interest", "fine", "total")
        },
        "section": notice.section,
    }


@letter(
    ce.CaseStepRecorded,
    lambda step: "decision" if step.step in DECISION_STEPS else None,
    period=lambda step: step.period,
)
def on_case_step(step: ce.CaseStepRecorded, lang: str) -> dict[str, str]:
    amounts = "".join(
        f"{texts.word(lang, k)}: {texts.money(v, lang)}\n" for k, v in sorted(step.amounts.items())
    )
    appeal = (
        texts.CATALOG[lang]["decision.appeal"].format(deadline=texts.day(step.appeal_deadline, lang))
        if step.appeal_deadline
        else ""
    )
    return {
        "on": texts.day(step.on, lang),
        "outcome": texts.word(lang, step.outcome),
        "reasons": step.reasons or "",
        "amounts": amounts + ("\n" if amounts else ""),
        "appeal": appeal,
        "section": step.section,
    }


@letter(ce.AbatementDecided, lambda _: "abatement", period=lambda decided: decided.period)
def on_abatement_decided(decided: ce.AbatementDecided, lang: str) -> dict[str, str]:
    return {
        "component": texts.word(lang, decided.component),
        "on": texts.day(decided.decided_on, lang),
        "outcome": texts.word(lang, decided.outcome),
        "amount": texts.money(decided.amount, lang),
        "reasons": decided.reasons,
        "section": decided.section,
    }


# --------------------------------------------------------------------------- payment plans


@letter(pe.PlanGranted, lambda _: "plan_granted")
def on_plan_granted(plan: pe.PlanGranted, lang: str) -> dict[str, str]:
    schedule = "".join(
        texts.CATALOG[lang]["plan.term"].format(
            what=texts.installment(lang, term.number),
            due=texts.day(term.due_on, lang),
            amount=texts.money(term.amount, lang),
        )
        for term in plan.schedule
    )
    return {
        "plan_id": plan.plan_id,
        "periods": ", ".join(plan.periods),
        "granted_on": texts.day(plan.granted_on, lang),
        "as_of": texts.day(plan.balance_as_of, lang),
        "planned": texts.money(plan.planned_amount, lang),
        "schedule": schedule,
        "grace_days": str(plan.grace_days),
        "section": plan.section,
    }


@letter(pe.PlanRequestDeclined, lambda _: "plan_declined", document=False)
def on_plan_declined(declined: pe.PlanRequestDeclined, lang: str) -> dict[str, str]:
    return {"on": texts.day(declined.declined_on, lang), "reasons": declined.reasons}


@letter(pe.PlanInstallmentReopened, lambda _: "plan_installment_reopened", document=False)
def on_plan_installment_reopened(back: pe.PlanInstallmentReopened, lang: str) -> dict[str, str]:
    return {
        "plan_id": back.plan_id,
        "payment": back.payment_id or "—",
        "what": texts.installment(lang, back.number),
        "on": texts.day(back.reopened_on, lang),
        "due": texts.day(back.due_on, lang),
        "unpaid": texts.money(back.unpaid, lang),
        "pay_by": texts.day(back.pay_by, lang),
    }


@letter(pe.PlanDefaulted, lambda _: "plan_defaulted", document=False)
def on_plan_defaulted(default: pe.PlanDefaulted, lang: str) -> dict[str, str]:
    return {
        "plan_id": default.plan_id,
        "what": texts.installment(lang, default.number),
        "due": texts.day(default.due_on, lang),
        "unpaid": texts.money(default.unpaid, lang),
        "grace_days": str(default.grace_days),
        "on": texts.day(default.defaulted_on, lang),
        "notices": str(len(default.notice_ids)),
        "section": default.section,
    }


# --------------------------------------------------------------------------- audits


@letter(
    co.AuditStepRecorded,
    lambda step: f"audit_{step.step}" if step.step in AUDIT_LETTERS else None,
    period=lambda step: step.period,
)
def on_audit_step(step: co.AuditStepRecorded, lang: str) -> dict[str, str]:
    return {
        "audit_id": step.audit_id,
        "periods": ", ".join(step.periods),
        "on": texts.day(step.on, lang),
        "records_due": texts.day(step.records_due_on, lang) if step.records_due_on else "",
        "additional_tax": "" if step.additional_tax is None else texts.money(step.additional_tax, lang),
        "response_due": texts.day(step.response_due_on, lang) if step.response_due_on else "",
        "outcome": texts.word(lang, step.outcome),
        "section": step.section,
    }
