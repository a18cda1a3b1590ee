"""The e-mails' words in English and Spanish (the catalog), amounts and dates through Babel.

A message is the lodging's preferred language when the registry carries one, else the
jurisdiction's: Spanish in Puerto Rico, English in the U.S. Virgin Islands. Each text
cites the statute section the event carries. The official documents (PDF notices and
letters) are not attached: each message says so and where to find them.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from babel.dates import format_date
from babel.numbers import format_currency

LANGUAGES = ("en", "es")
DEFAULT_LANGUAGE = {"PR": "es", "VI": "en"}
LOCALES = {"en": "en_US", "es": "es_PR"}


def language_for(jurisdiction: str | None, preferred: str | None = None) -> str:
    if preferred in LANGUAGES:
        return str(preferred)
    return DEFAULT_LANGUAGE.get(jurisdiction or "", "en")


def money(amount: Decimal | str, language: str) -> str:
    return str(format_currency(Decimal(amount), "USD", locale=LOCALES[language]))


def day(on: date | str, language: str) -> str:
    value = date.fromisoformat(on) if isinstance(on, str) else on
    return str(format_date(value, "long", locale=LOCALES[language]))


CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "greeting": "Dear {name},",
        "closing": "Roomtax — the room occupancy tax administration\nThis message was sent automatically.",
        "no_document": "This e-mail is the text of the document; the official document (PDF) is not "
        "attached. It is available in the taxpayer portal: {portal}",
        "notice.subject": "Notice of deficiency for {lodging} ({account}), period {period}",
        "notice.body": "A notice of deficiency ({kind}) was issued on {issued_on} for {lodging}, tax account "
        "{account}, period {period}.\n\nReason: {reason}\n\nTax: {tax}\nImpact fee: {impact_fee}\n"
        "Penalty: {penalty}\nInterest: {interest}\nFine: {fine}\nTotal owed: {total}\n\n"
        "You may answer until {deadline}. Legal basis: {section}.",
        "decision.subject": "Decision on your case for {lodging} ({account}), period {period}",
        "decision.body": "A decision was recorded on {on} for {lodging}, tax account {account}, period "
        "{period}: {outcome}.\n\n{reasons}\n{amounts}{appeal}Legal basis: {section}.",
        "decision.appeal": "You may appeal until {deadline}.\n",
        "abatement.subject": "Decision on your abatement request for {lodging} ({account}), period {period}",
        "abatement.body": "Your request to abate the {component} of period {period} for {lodging}, tax "
        "account {account}, was decided on {on}: {outcome}. Amount abated: {amount}.\n\n{reasons}\n\n"
        "Legal basis: {section}.",
        "receipt.subject": "Receipt for your payment of {amount} ({account})",
        "receipt.body": "We received a payment of {amount} on {received_on} for tax account {account} "
        "({lodging}), by {method}. Payment reference: {payment_id}.\n{periods}\n"
        "Receipt issued on request ({section}).",
        "receipt.period": "Applied as designated to period {period}: {amount}",
        "reminder.subject": "Reminder: the return for {period} of {lodging} is due on {due}",
        "reminder.body": "Our records show no return filed for {lodging}, tax account {account}, for the "
        "period {period}. The return and the payment are due on {due} ({section}).\n\nIf you have "
        "already filed, thank you: you may ignore this reminder.",
        "plan_granted.subject": "Your payment plan for {lodging} ({account}) was granted",
        "plan_granted.body": "A payment plan ({plan_id}) was granted on {granted_on} for {lodging}, tax "
        "account {account}, periods {periods}: {planned}, the balance as of {as_of}.\n\n"
        "{schedule}\nA payment counts towards the plan when it is received; an installment unpaid "
        "{grace_days} days after its due date ends the plan and collection of the periods resumes.\n\n"
        "Legal basis: {section}.",
        "plan.term": "- {what}, due {due}: {amount}\n",
        "plan.down_payment": "Down payment",
        "plan.installment": "Installment {number}",
        "plan_declined.subject": "Your payment plan request for {lodging} ({account}) was declined",
        "plan_declined.body": "Your request for a payment plan for {lodging}, tax account {account}, was "
        "declined on {on}.\n\nReasons: {reasons}\n\nThe balance stays due; you may pay it or ask again "
        "in the taxpayer portal.",
        "plan_installment_reopened.subject": "A payment of your plan for {lodging} ({account}) was returned",
        "plan_installment_reopened.body": "The payment {payment} of the payment plan {plan_id} for "
        "{lodging}, tax account {account}, was returned on {on}: {what}, due {due}, which it had paid, "
        "is unpaid again ({unpaid}).\n\nPay it by {pay_by} to keep the plan; unpaid after that "
        "day, it ends the plan and collection of the periods resumes.",
        "plan_defaulted.subject": "Your payment plan for {lodging} ({account}) has ended unpaid",
        "plan_defaulted.body": "The payment plan {plan_id} for {lodging}, tax account {account}, ended on "
        "{on}: {what}, due {due}, stayed unpaid ({unpaid}) for more than {grace_days} days.\n\n"
        "Collection of the periods resumes, and {notices} notice(s) of deficiency were issued; each "
        "comes in its own message.\n\nLegal basis: {section}.",
        "audit_records_requested.subject": "Records requested for the audit of {lodging} ({account})",
        "audit_records_requested.body": "The agency is auditing {lodging}, tax account {account}, for the "
        "periods {periods} (audit {audit_id}). On {on} it requested the records listed in the letter; "
        "please provide them by {records_due}.\n\nLegal basis: {section}.",
        "audit_notice.subject": "Notice of audit assessment for {lodging} ({account})",
        "audit_notice.body": "The audit {audit_id} of {lodging}, tax account {account}, periods {periods}, "
        "found additional tax of {additional_tax} (notice of {on}). You may answer until "
        "{response_due}.\n\nLegal basis: {section}.",
        "audit_closed.subject": "The audit of {lodging} ({account}) is closed",
        "audit_closed.body": "The audit {audit_id} of {lodging}, tax account {account}, periods {periods}, "
        "was closed on {on}: {outcome}.\n\nLegal basis: {section}.",
        "webhook_disabled.subject": "Your Roomtax webhook to {url} was disabled",
        "webhook_disabled.body": "The webhook {id} to {url} was disabled on {on} after deliveries failed "
        "persistently: {reason}.\n\nEvents are no longer sent to it. Fix the endpoint, then enable it "
        "again (POST /v1/webhooks/{id}/enable) and redeliver what it missed.",
    },
    "es": {
        "greeting": "Estimado(a) {name}:",
        "closing": "Roomtax — administración del impuesto sobre el canon por ocupación de habitación\n"
        "Este mensaje se envió automáticamente.",
        "no_document": "Este correo contiene el texto del documento; el documento oficial (PDF) no se "
        "adjunta. Está disponible en el portal del contribuyente: {portal}",
        "notice.subject": "Notificación de deficiencia para {lodging} ({account}), periodo {period}",
        "notice.body": "Se emitió una notificación de deficiencia ({kind}) el {issued_on} para {lodging}, "
        "número de cuenta {account}, periodo {period}.\n\nMotivo: {reason}\n\nImpuesto: {tax}\n"
        "Cargo por impacto: {impact_fee}\nRecargo: {penalty}\nIntereses: {interest}\nMulta: {fine}\n"
        "Total adeudado: {total}\n\nPuede responder hasta el {deadline}. Base legal: {section}.",
        "decision.subject": "Decisión sobre su caso para {lodging} ({account}), periodo {period}",
        "decision.body": "Se registró una decisión el {on} para {lodging}, número de cuenta {account}, "
        "periodo {period}: {outcome}.\n\n{reasons}\n{amounts}{appeal}Base legal: {section}.",
        "decision.appeal": "Puede apelar hasta el {deadline}.\n",
        "abatement.subject": "Decisión sobre su solicitud de condonación para {lodging} ({account}), "
        "periodo {period}",
        "abatement.body": "Su solicitud de condonar {component} del periodo {period} para {lodging}, "
        "número de cuenta {account}, se decidió el {on}: {outcome}. Cantidad condonada: {amount}.\n\n"
        "{reasons}\n\nBase legal: {section}.",
        "receipt.subject": "Recibo de su pago de {amount} ({account})",
        "receipt.body": "Recibimos un pago de {amount} el {received_on} para el número de cuenta "
        "{account} ({lodging}), por {method}. Referencia del pago: {payment_id}.\n{periods}\n"
        "Recibo emitido a solicitud ({section}).",
        "receipt.period": "Aplicado según designado al periodo {period}: {amount}",
        "reminder.subject": "Recordatorio: la planilla de {period} de {lodging} vence el {due}",
        "reminder.body": "Nuestros registros no muestran planilla radicada para {lodging}, número de "
        "cuenta {account}, para el periodo {period}. La planilla y el pago vencen el {due} ({section}).\n\n"
        "Si ya la radicó, gracias: puede ignorar este recordatorio.",
        "plan_granted.subject": "Se concedió su plan de pagos para {lodging} ({account})",
        "plan_granted.body": "Se concedió un plan de pagos ({plan_id}) el {granted_on} para {lodging}, "
        "número de cuenta {account}, periodos {periods}: {planned}, el balance al {as_of}.\n\n"
        "{schedule}\nUn pago cuenta para el plan cuando se recibe; un plazo sin pagar {grace_days} días "
        "después de su vencimiento termina el plan y se reanuda el cobro de los periodos.\n\n"
        "Base legal: {section}.",
        "plan.term": "- {what}, vence el {due}: {amount}\n",
        "plan.down_payment": "Pago inicial",
        "plan.installment": "Plazo {number}",
        "plan_declined.subject": "Se denegó su solicitud de plan de pagos para {lodging} ({account})",
        "plan_declined.body": "Su solicitud de plan de pagos para {lodging}, número de cuenta {account}, "
        "se denegó el {on}.\n\nMotivos: {reasons}\n\nEl balance sigue adeudado; puede pagarlo o "
        "solicitarlo de nuevo en el portal del contribuyente.",
        "plan_installment_reopened.subject": "Se devolvió un pago de su plan para {lodging} ({account})",
        "plan_installment_reopened.body": "El pago {payment} del plan de pagos {plan_id} para {lodging}, "
        "número de cuenta {account}, se devolvió el {on}: {what}, que vence el {due} y que ese pago "
        "había pagado, queda otra vez sin pagar ({unpaid}).\n\nPáguelo a más tardar el {pay_by} para "
        "conservar el plan; sin pagar después de ese día, termina el plan y se reanuda el cobro de los "
        "periodos.",
        "plan_defaulted.subject": "Su plan de pagos para {lodging} ({account}) terminó sin pagarse",
        "plan_defaulted.body": "El plan de pagos {plan_id} para {lodging}, número de cuenta {account}, "
        "terminó el {on}: {what}, que vencía el {due}, siguió sin pagar ({unpaid}) más de {grace_days} "
        "días.\n\nSe reanuda el cobro de los periodos y se emitieron {notices} notificación(es) de "
        "deficiencia; cada una llega en su propio mensaje.\n\nBase legal: {section}.",
        "audit_records_requested.subject": "Documentos solicitados para la auditoría de {lodging} "
        "({account})",
        "audit_records_requested.body": "La agencia audita {lodging}, número de cuenta {account}, para los "
        "periodos {periods} (auditoría {audit_id}). El {on} solicitó los documentos que enumera la carta; "
        "entréguelos a más tardar el {records_due}.\n\nBase legal: {section}.",
        "audit_notice.subject": "Notificación de determinación de auditoría para {lodging} ({account})",
        "audit_notice.body": "La auditoría {audit_id} de {lodging}, número de cuenta {account}, periodos "
        "{periods}, determinó un impuesto adicional de {additional_tax} (notificación del {on}). Puede "
        "responder hasta el {response_due}.\n\nBase legal: {section}.",
        "audit_closed.subject": "Se cerró la auditoría de {lodging} ({account})",
        "audit_closed.body": "La auditoría {audit_id} de {lodging}, número de cuenta {account}, periodos "
        "{periods}, se cerró el {on}: {outcome}.\n\nBase legal: {section}.",
        "webhook_disabled.subject": "Se desactivó su webhook de Roomtax a {url}",
        "webhook_disabled.body": "El webhook {id} a {url} se desactivó el {on} porque las entregas "
        "fallaron de forma persistente: {reason}.\n\nYa no se le envían eventos. Corrija el destino, "
        "actívelo de nuevo (POST /v1/webhooks/{id}/enable) y reenvíe lo que no recibió.",
    },
}

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "deficiency": "deficiency",
        "clerical_error": "mathematical or clerical error",
        "sustain": "the assessment is sustained",
        "reduce": "the assessment is reduced",
        "cancel": "the assessment is cancelled",
        "upheld": "the decision is upheld on appeal",
        "withdrawn": "the appeal was withdrawn",
        "full": "granted in full",
        "partial": "granted in part",
        "deny": "denied",
        "penalty": "penalty",
        "interest": "interest",
        "fine": "fine",
        "tax": "tax",
        "impact_fee": "impact fee",
        "total": "total",
        "ach": "ACH transfer",
        "check": "check",
        "wire": "wire transfer",
        "cash": "cash",
        "card": "card",
        "postal_money_order": "postal money order",
        "bank_money_order": "bank money order",
        "cashiers_check": "cashier's check",
        "electronic_transfer": "electronic transfer",
        "no_change": "no change to what is owed",
        "assessed": "additional tax was assessed",
        "agreed": "the additional tax was agreed",
    },
    "es": {
        "deficiency": "deficiencia",
        "clerical_error": "error matemático o clerical",
        "sustain": "se sostiene la determinación",
        "reduce": "se reduce la determinación",
        "cancel": "se cancela la determinación",
        "upheld": "se confirma la decisión en apelación",
        "withdrawn": "se desistió de la apelación",
        "full": "concedida en su totalidad",
        "partial": "concedida en parte",
        "deny": "denegada",
        "penalty": "el recargo",
        "interest": "los intereses",
        "fine": "la multa",
        "tax": "impuesto",
        "impact_fee": "cargo por impacto",
        "total": "total",
        "ach": "transferencia ACH",
        "check": "cheque",
        "wire": "transferencia cablegráfica",
        "cash": "efectivo",
        "card": "tarjeta",
        "postal_money_order": "giro postal",
        "bank_money_order": "giro bancario",
        "cashiers_check": "cheque de gerente",
        "electronic_transfer": "transferencia electrónica",
        "no_change": "sin cambio en lo adeudado",
        "assessed": "se determinó impuesto adicional",
        "agreed": "se acordó el impuesto adicional",
    },
}


def word(language: str, key: str | None) -> str:
    if key is None:
        return ""
    return WORDS[language].get(key, key)


def installment(language: str, number: int) -> str:
    """A plan's term by its number: 0 is the down payment."""
    if number == 0:
        return CATALOG[language]["plan.down_payment"]
    return CATALOG[language]["plan.installment"].format(number=number)


def render(
    message: str, language: str, /, *, name: str, portal: str | None, **fields: str
) -> tuple[str, str]:
    """(subject, body) of a ``message`` (notice, reminder, ...) in ``language``."""
    texts = CATALOG[language]
    subject = texts[f"{message}.subject"].format(**fields)
    parts = [texts["greeting"].format(name=name), "", texts[f"{message}.body"].format(**fields)]
    if portal is not None:
        parts += ["", texts["no_document"].format(portal=portal)]
    parts += ["", "-- ", texts["closing"]]
    return subject, "\n".join(parts) + "\n"
