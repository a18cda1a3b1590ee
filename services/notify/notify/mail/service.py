"""E-mail use-cases: which events become which messages, to whom, in which language.

Every message is a row of ``emails`` written in the transaction of the event (or the
request) that decided it, keyed by what it is about (``notice:<event id>``,
``reminder:<tax account>:<period>``...): a redelivered event or a second request
queues nothing new. The sender (:mod:`notify.mail.sender`) sends it afterwards.
Messages go to the operator of the lodging (the taxpayer), at the address the
registry holds for it; with no address the row is kept as ``no_address``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from notify.mail import repository, texts
from notify.models import Lodging, Subscription
from notify.projection import repository as projection
from notify.settings import NotifySettings
from servicekit.auth import Principal
from servicekit.errors import NotFound
from taxcore.periods import Period

#: PR §28(C): the Company issues a receipt on request; 33 V.I.C. §54 has no such clause
RECEIPT_SECTION = {"PR": "PR Act 272-2003 §28(C)", "VI": "33 V.I.C. § 54(f)"}
DUE_SECTION = {"PR": "PR Act 272-2003 §28(A)-(B)", "VI": "33 V.I.C. § 54(f)"}


@dataclass(frozen=True, slots=True)
class Recipient:
    kind: str
    id: str
    name: str
    email: str | None
    language: str


async def operator_of(session: AsyncSession, *, lodging: Lodging) -> Recipient:
    party = await projection.party(session, "operator", lodging.operator_id)
    return Recipient(
        kind="operator",
        id=lodging.operator_id,
        name=party.name if party else lodging.name,
        email=party.email if party else None,
        language=texts.language_for(lodging.jurisdiction, lodging.language),
    )


async def queue(
    session: AsyncSession,
    *,
    key: str,
    kind: str,
    to: Recipient,
    fields: dict[str, str],
    settings: NotifySettings,
    tax_account: str | None = None,
    period: str | None = None,
    document: bool = False,
) -> bool:
    """Queue one message (once per ``key``); ``document``: it stands for an official
    document, which it says is not attached and where it is."""
    subject, body = texts.render(
        kind, to.language, name=to.name, portal=settings.portal_url if document else None, **fields
    )
    return await repository.add(
        session,
        {
            "message_key": key,
            "kind": kind,
            "recipient_kind": to.kind,
            "recipient_id": to.id,
            "to_address": to.email,
            "language": to.language,
            "subject": subject,
            "body": body,
            "tax_account": tax_account,
            "period": period,
            "status": "pending" if to.email else "no_address",
        },
    )


async def lodging_and_operator(
    session: AsyncSession, *, tax_account: str
) -> tuple[Lodging | None, Recipient]:
    lodging = await projection.lodging_by_account(session, tax_account)
    if lodging is None:  # not projected yet: kept, visibly, as undeliverable
        return None, Recipient("operator", "unknown", tax_account, None, "en")
    return lodging, await operator_of(session, lodging=lodging)


async def request_receipt(
    session: AsyncSession, *, principal: Principal, payment_id: str, settings: NotifySettings
) -> tuple[str, bool]:
    """Queue the receipt of a payment to the caller's party (the agency: to the operator).

    An operator may ask for the receipts of its lodgings' payments, a facilitator for
    the payments it made; any other payment is a 404. Returns (message key, queued now).
    """
    payment = await projection.payment(session, payment_id)
    lodging = await projection.lodging_by_account(session, payment.tax_account) if payment else None
    if (
        payment is None
        or lodging is None
        or not _may_read_payment(principal, payment.payer_kind, payment.payer_id, lodging)
    ):
        raise NotFound(f"no payment {payment_id}")
    to = await operator_of(session, lodging=lodging)
    if principal.role == "facilitator" and principal.facilitator_id:
        party = await projection.party(session, "facilitator", principal.facilitator_id)
        to = Recipient(
            "facilitator",
            principal.facilitator_id,
            party.name if party else principal.facilitator_id,
            party.email if party else None,
            to.language,
        )
    lang = to.language
    periods = "".join(
        texts.CATALOG[lang]["receipt.period"].format(
            period=p["period"], amount=texts.money(p["amount"], lang)
        )
        + "\n"
        for p in payment.periods
    )
    fields = {
        "amount": texts.money(payment.amount, lang),
        "account": payment.tax_account,
        "lodging": lodging.name,
        "received_on": texts.day(payment.received_on, lang),
        "method": texts.word(lang, payment.method),
        "payment_id": payment.payment_id,
        "periods": periods,
        "section": RECEIPT_SECTION.get(payment.jurisdiction, "33 V.I.C. § 54(f)"),
    }
    key = f"receipt:{payment.payment_id}:{to.kind}:{to.id}"
    queued = await queue(
        session,
        key=key,
        kind="receipt",
        to=to,
        fields=fields,
        settings=settings,
        tax_account=payment.tax_account,
        document=True,
    )
    return key, queued


def _may_read_payment(principal: Principal, payer_kind: str, payer_id: str, lodging: Lodging) -> bool:
    if principal.is_agency:
        return True
    if principal.role == "operator":
        return lodging.operator_id == principal.operator_id
    if principal.role == "facilitator":
        return payer_kind == "facilitator" and payer_id == principal.facilitator_id
    return False


def reminder_key(tax_account: str, period: Period) -> str:
    return f"reminder:{tax_account}:{period}"


async def remind(
    session: AsyncSession, *, lodging: Lodging, period: Period, due: date, settings: NotifySettings
) -> bool:
    to = await operator_of(session, lodging=lodging)
    lang = to.language
    fields = {
        "lodging": lodging.name,
        "account": lodging.tax_account,
        "period": str(period),
        "due": texts.day(due, lang),
        "section": DUE_SECTION.get(lodging.jurisdiction, "33 V.I.C. § 54(f)"),
    }
    return await queue(
        session,
        key=reminder_key(lodging.tax_account, period),
        kind="reminder",
        to=to,
        fields=fields,
        settings=settings,
        tax_account=lodging.tax_account,
        period=str(period),
    )


async def cancel_reminder(session: AsyncSession, *, tax_account: str, period: str) -> int:
    """A return arrived: a reminder for its period that has not left yet never will."""
    return await repository.cancel_pending(session, kind="reminder", tax_account=tax_account, period=period)


async def webhook_disabled(
    session: AsyncSession, *, sub: Subscription, settings: NotifySettings, on: date
) -> None:
    """Tell a webhook's owner that it was disabled on ``on`` (the agency: at ``agency_email``)."""
    if sub.owner_kind == "agency":
        to = Recipient("agency", "agency", "Roomtax", settings.agency_email, "en")
    else:
        party = await projection.party(session, sub.owner_kind, sub.owner_id)
        jurisdiction, preferred = (
            await repository.operator_language_hint(session, sub.owner_id)
            if sub.owner_kind == "operator"
            else (None, None)
        )
        to = Recipient(
            sub.owner_kind,
            sub.owner_id,
            party.name if party else sub.owner_id,
            party.email if party else None,
            texts.language_for(jurisdiction, preferred),
        )
    on = sub.disabled_at.date() if sub.disabled_at else on
    fields = {
        "id": sub.id,
        "url": sub.url,
        "on": texts.day(on, to.language),
        "reason": sub.disabled_reason or "",
    }
    await queue(
        session,
        key=f"webhook_disabled:{sub.id}:{sub.disabled_at.isoformat() if sub.disabled_at else ''}",
        kind="webhook_disabled",
        to=to,
        fields=fields,
        settings=settings,
    )
