"""The e-mails some events call for: each handler reads its contract and queues the
letter through :mod:`notify.mail.service` (keyed ``<kind>:<event id>``, so a redelivery
queues nothing new)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from notify.mail import service, texts
from notify.settings import NotifySettings
from taxcore.events import CloudEvent
from taxcore.events import assessment as ae
from taxcore.events import cases as ce

DECISION_STEPS = frozenset({"decided", "appeal_resolved"})


class _About(Protocol):
    """What a letter is about: the account and period it names, under a section of law."""

    @property
    def tax_account(self) -> str: ...
    @property
    def period(self) -> str: ...
    @property
    def section(self) -> str: ...


async def _letter(
    session: AsyncSession,
    event: CloudEvent,
    *,
    kind: str,
    about: _About,
    fields: Callable[[str], dict[str, str]],
    settings: NotifySettings,
) -> None:
    """Queue the e-mail standing for an official document to the lodging's operator;
    ``fields(language)`` gives what the letter says beyond the lodging, account, period
    and section."""
    lodging, to = await service.lodging_and_operator(session, tax_account=about.tax_account)
    await service.queue(
        session,
        key=f"{kind}:{event.id}",
        kind=kind,
        to=to,
        fields={
            "lodging": lodging.name if lodging else about.tax_account,
            "account": about.tax_account,
            "period": about.period,
            "section": about.section,
            **fields(to.language),
        },
        settings=settings,
        tax_account=about.tax_account,
        period=about.period,
        document=True,
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
        }

    await _letter(session, event, kind="notice", about=notice, fields=fields, settings=settings)


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
        }

    await _letter(session, event, kind="decision", about=step, fields=fields, settings=settings)


async def on_abatement_decided(session: AsyncSession, event: CloudEvent, *, settings: NotifySettings) -> None:
    decided = ce.AbatementDecided.model_validate(event.data)

    def fields(lang: str) -> dict[str, str]:
        return {
            "component": texts.word(lang, decided.component),
            "on": texts.day(decided.decided_on, lang),
            "outcome": texts.word(lang, decided.outcome),
            "amount": texts.money(decided.amount, lang),
            "reasons": decided.reasons,
        }

    await _letter(session, event, kind="abatement", about=decided, fields=fields, settings=settings)
