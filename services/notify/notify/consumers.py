"""notify consumes the platform's events: its registry projection, webhook fan-out and
the e-mails some events call for. One consumer over every topic a subscriber may want;
each event is one transaction with its inbox row (servicekit.consumer)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from notify.mail import handlers as mail_handlers
from notify.mail import service as mail
from notify.projection import handlers as projection
from notify.settings import NotifySettings
from notify.webhooks import handlers as webhook_handlers
from notify.webhooks import service as webhooks
from notify.webhooks.tenancy import SUBSCRIBABLE
from servicekit.consumer import AnyHandler, EventConsumer, Handler, handles
from servicekit.revocations import revocation_consumer
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings
from taxcore import obligations
from taxcore.events import CloudEvent, EventData
from taxcore.events import assessment as ae
from taxcore.events import cases as ce
from taxcore.events import compliance as co
from taxcore.events import filing as fe
from taxcore.events import plans as pe
from taxcore.events import registry as rge
from taxcore.events.assessment import ACCOUNTS, NOTICES
from taxcore.events.cases import CASES
from taxcore.events.distribution import RUNS
from taxcore.events.filing import DECLARATIONS, PAYMENTS
from taxcore.events.registry import LODGINGS, PARTIES
from taxcore.periods import Period

NAME = "notify-events"
TOPICS = [LODGINGS, PARTIES, DECLARATIONS, PAYMENTS, ACCOUNTS, NOTICES, CASES, RUNS]


async def on_lodging(session: AsyncSession, event: CloudEvent) -> None:
    snap = await projection.project_lodging(session, event)
    await webhooks.release_awaiting(session, tax_account=snap.tax_account, operator_id=snap.operator_id)
    await webhooks.fan_out(session, event=event)


async def on_authorization(session: AsyncSession, event: CloudEvent) -> None:
    await projection.project_authorization(session, event)
    await webhooks.fan_out(session, event=event)


@handles(fe.DeclarationFiled, fe.DeclarationAmended)
async def on_declaration(session: AsyncSession, _: EventData, event: CloudEvent, runtime: Runtime) -> None:
    """The projection, then a reminder no longer needed cancelled (the runtime's law says which
    filer meets the obligation), then the webhooks."""
    decl = await projection.project_declaration(session, event)
    period = Period.parse(decl.period)
    if obligations.satisfies_declaration(decl.jurisdiction, period, decl.filer_kind, parameters=runtime.law):
        await mail.cancel_reminder(session, tax_account=decl.tax_account, period=decl.period)
    await webhooks.fan_out(session, event=event)


async def on_payment(session: AsyncSession, event: CloudEvent) -> None:
    await projection.project_payment(session, event)
    await webhooks.fan_out(session, event=event)


def with_mail(letter: Callable[[NotifySettings], mail_handlers.Mail], settings: NotifySettings) -> Handler:
    send = letter(settings)

    async def handle(session: AsyncSession, event: CloudEvent) -> None:
        await webhooks.fan_out(session, event=event)
        await send(session, event)

    return handle


def handlers(settings: NotifySettings) -> dict[str, AnyHandler]:
    table: dict[str, AnyHandler] = {
        rge.OperatorRegistered.event_type: projection.project_operator,
        rge.FacilitatorRegistered.event_type: projection.project_facilitator,
        rge.AuthorizationGranted.event_type: on_authorization,
        rge.AuthorizationEnded.event_type: on_authorization,
        fe.DeclarationFiled.event_type: on_declaration,
        fe.DeclarationAmended.event_type: on_declaration,
        fe.PaymentReceived.event_type: on_payment,
        ae.NoticeIssued.event_type: with_mail(mail_handlers.on_notice, settings),
        ce.CaseStepRecorded.event_type: with_mail(mail_handlers.on_case_step, settings),
        ce.AbatementDecided.event_type: with_mail(mail_handlers.on_abatement_decided, settings),
        pe.PlanGranted.event_type: with_mail(mail_handlers.on_plan_granted, settings),
        pe.PlanRequestDeclined.event_type: with_mail(mail_handlers.on_plan_declined, settings),
        pe.PlanInstallmentReopened.event_type: with_mail(
            mail_handlers.on_plan_installment_reopened, settings
        ),
        pe.PlanDefaulted.event_type: with_mail(mail_handlers.on_plan_defaulted, settings),
        co.AuditStepRecorded.event_type: with_mail(mail_handlers.on_audit_step, settings),
    }
    for event_type in (
        rge.LodgingRegistered.event_type,
        rge.LodgingUpdated.event_type,
        rge.LodgingStatusChanged.event_type,
        rge.LodgingAttributesChanged.event_type,
    ):
        table[event_type] = on_lodging
    for event_type in SUBSCRIBABLE:
        table.setdefault(event_type, webhook_handlers.fan_out_handler)
    return table


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession], runtime: Runtime
) -> list[EventConsumer]:
    assert isinstance(settings, NotifySettings)
    return [
        EventConsumer(
            name=NAME,
            bootstrap=settings.kafka_bootstrap,
            topics=TOPICS,
            sessionmaker=sessionmaker,
            runtime=runtime,
            handlers=handlers(settings),
        ),
        revocation_consumer(settings, sessionmaker, runtime),
    ]
