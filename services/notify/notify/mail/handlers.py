"""The e-mails some events call for: each handler reads its contract and queues the
letter through :mod:`notify.mail.service` (keyed ``<kind>:<event id>``, so a redelivery
queues nothing new)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession

from notify.mail import service, texts
from notify.settings import NotifySettings
from taxcore.events import CloudEvent
from taxcore.events import assessment as ae
from taxcore.events import cases as ce
from taxcore.events import compliance as co
from taxcore.events import plans as pe

DECISION_STEPS = frozenset({"decided", "appeal_resolved"})


async def _letter(
    session: AsyncSession,
    event: CloudEvent,
    *,
    kind: str,
    tax_account: str,
    period: str | None,
    fields: Callable[[str], dict[str, str]],
    settings: NotifySettings,
    document: bool = True,
) -> None:
    """Queue the e-mail an event calls for to the lodging's operator; ``fields(language)``
    gives what the letter says beyond the lodging and the account (and the period, when the
    event names one). ``document``: the e-mail stands for an official document."""
    lodging, to = await service.lodging_and_operator(session, tax_account=tax_account)
    await service.queue(
        session,
        key=f"{kind}:{event.id}",
        kind=kind,
        to=to,
        fields={
            "lodging": lodging.name if lodging else tax_account,
            "account": tax_account,
            **({"period": period} if period else {}),
            **fields(to.language),
        },
        settings=settings,
        tax_account=tax_account,
        period=period,
        document=document,
    )


async def on_notice(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    notice = ae.NoticeIssued.model_validate(event.data)

    def fields(lang: str) -> dict[str, str]:
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

    await _letter(
        session,
        event,
        kind="notice",
        tax_account=notice.tax_account,
        period=notice.period,
        fields=fields,
        settings=settings,
    )


async def on_case_step(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    step = ce.CaseStepRecorded.model_validate(event.data)
    if step.step not in DECISION_STEPS:
        return

    def fields(lang: str) -> dict[str, str]:
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

    await _letter(
        session,
        event,
        kind="decision",
        tax_account=step.tax_account,
        period=step.period,
        fields=fields,
        settings=settings,
    )


async def on_abatement_decided(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    decided = ce.AbatementDecided.model_validate(event.data)

    def fields(lang: str) -> dict[str, str]:
        return {
            "component": texts.word(lang, decided.component),
            "on": texts.day(decided.decided_on, lang),
            "outcome": texts.word(lang, decided.outcome),
            "amount": texts.money(decided.amount, lang),
            "reasons": decided.reasons,
            "section": decided.section,
        }

    await _letter(
        session,
        event,
        kind="abatement",
        tax_account=decided.tax_account,
        period=decided.period,
        fields=fields,
        settings=settings,
    )


# --------------------------------------------------------------------------- payment plans


async def on_plan_granted(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    plan = pe.PlanGranted.model_validate(event.data)

    def fields(lang: str) -> dict[str, str]:
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

    await _letter(
        session,
        event,
        kind="plan_granted",
        tax_account=plan.tax_account,
        period=None,
        fields=fields,
        settings=settings,
    )


async def on_plan_declined(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    declined = pe.PlanRequestDeclined.model_validate(event.data)

    def fields(lang: str) -> dict[str, str]:
        return {"on": texts.day(declined.declined_on, lang), "reasons": declined.reasons}

    await _letter(
        session,
        event,
        kind="plan_declined",
        tax_account=declined.tax_account,
        period=None,
        fields=fields,
        settings=settings,
        document=False,
    )


async def on_plan_defaulted(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    default = pe.PlanDefaulted.model_validate(event.data)

    def fields(lang: str) -> dict[str, str]:
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

    await _letter(
        session,
        event,
        kind="plan_defaulted",
        tax_account=default.tax_account,
        period=None,
        fields=fields,
        settings=settings,
        document=False,
    )


# --------------------------------------------------------------------------- audits

#: the audit steps the taxpayer is written to about (opening and findings are the agency's
#: work; the records request, the notice of audit assessment and the closing reach them)
AUDIT_LETTERS = frozenset({"records_requested", "notice", "closed"})


async def on_audit_step(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    step = co.AuditStepRecorded.model_validate(event.data)
    if step.step not in AUDIT_LETTERS:
        return

    def fields(lang: str) -> dict[str, str]:
        return {
            "audit_id": step.audit_id,
            "periods": ", ".join(step.periods),
            "on": texts.day(step.on, lang),
            "records_due": texts.day(step.records_due_on, lang) if step.records_due_on else "",
            "additional_tax": texts.money(step.additional_tax, lang)
            if step.additional_tax is not None
            else "",
            "response_due": texts.day(step.response_due_on, lang) if step.response_due_on else "",
            "outcome": texts.word(lang, step.outcome),
            "section": step.section,
        }

    await _letter(
        session,
        event,
        kind=f"audit_{step.step}",
        tax_account=step.tax_account,
        period=step.period,
        fields=fields,
        settings=settings,
    )
