"""E-mail: notices, decisions and receipts on request, sent through a real SMTP server
(aiosmtpd on a free port), once per message, in the lodging's language."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from notify_factories import (
    DB,
    Sink,
    apply,
    audit_step,
    event,
    lodging,
    notice,
    operator,
    plan_granted,
    scalar,
)

from notify.mail.sender import message_id, send_due
from notify.settings import NotifySettings
from servicekit.runtime import SystemClock
from servicekit.testing import auth, free_port

OP = auth("operator", operator_id="op-m")
CLOCK = SystemClock()
OTHER = auth("operator", operator_id="op-other")


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    s.start()
    yield s
    s.stop()


@pytest.fixture
def smtp(notify_settings: NotifySettings, sink: Sink) -> NotifySettings:
    return notify_settings.model_copy(update={"smtp_port": sink.port})


async def pr_lodging(db: DB, settings: NotifySettings) -> str:
    await operator(db, settings, operator_id="op-m", email="owner@faro.example", name="Faro Hospitality LLC")
    return await lodging(db, settings, operator_id="op-m", name="Hotel El Faro")


class TestNotice:
    async def test_sent_once_in_spanish_for_puerto_rico(
        self, db: DB, smtp: NotifySettings, sink: Sink
    ) -> None:
        account = await pr_lodging(db, smtp)
        ev = notice(account)
        assert await apply(db, smtp, ev) == "applied"
        assert await apply(db, smtp, ev) == "duplicate"
        assert await send_due(db, smtp, clock=CLOCK) == 1
        assert await send_due(db, smtp, clock=CLOCK) == 0
        [(rcpt, msg)] = sink.messages
        assert rcpt == ["owner@faro.example"]
        assert (
            msg["Subject"] == f"Notificación de deficiencia para Hotel El Faro ({account}), periodo 2026-10"
        )
        assert msg["Message-ID"] == message_id(f"notice:{ev.id}")
        assert msg["Content-Language"] == "es"
        body = msg.get_content().replace("\r\n", "\n")
        assert body.startswith("Estimado(a) Faro Hospitality LLC:\n")
        for line in (
            "Impuesto: $1,234.50",
            "Intereses: $10.15",
            "Multa: $500.00",
            "Total adeudado: $1,744.65",
            "Puede responder hasta el 31 de diciembre de 2026. Base legal: PR Act 272-2003 §32.",
            "el documento oficial (PDF) no se adjunta. Está disponible en el portal del contribuyente: "
            "https://portal.roomtax.example/",
        ):
            assert line in body
        status = await scalar(
            db, "SELECT status || ':' || attempts FROM emails WHERE message_key = :k", k=f"notice:{ev.id}"
        )
        assert status == "sent:1"

    async def test_english_in_the_virgin_islands(self, db: DB, smtp: NotifySettings, sink: Sink) -> None:
        await operator(db, smtp, operator_id="op-vi", email="vi@hotel.example", name="Bluebeard LLC")
        account = await lodging(db, smtp, operator_id="op-vi", jurisdiction="VI", name="Bluebeard Castle")
        await apply(db, smtp, notice(account))
        await send_due(db, smtp, clock=CLOCK)
        [(_, msg)] = sink.messages
        assert msg["Subject"] == f"Notice of deficiency for Bluebeard Castle ({account}), period 2026-10"
        assert "Total owed: $1,744.65" in msg.get_content().replace("\r\n", "\n")

    async def test_smtp_down_is_retried_and_recorded(self, db: DB, notify_settings: NotifySettings) -> None:
        down = notify_settings.model_copy(update={"smtp_port": free_port()})
        account = await pr_lodging(db, down)
        ev = notice(account)
        await apply(db, down, ev)
        assert await send_due(db, down, clock=CLOCK) == 1
        row = await scalar(
            db,
            "SELECT status || ':' || attempts || ':' || (last_error IS NOT NULL) FROM emails "
            "WHERE message_key = :k",
            k=f"notice:{ev.id}",
        )
        assert row == "pending:1:true"

    async def test_no_address_is_kept_visibly(self, db: DB, notify_settings: NotifySettings) -> None:
        await operator(db, notify_settings, operator_id="op-nomail", email=None)
        account = await lodging(db, notify_settings, operator_id="op-nomail")
        ev = notice(account)
        await apply(db, notify_settings, ev)
        assert (
            await scalar(db, "SELECT status FROM emails WHERE message_key = :k", k=f"notice:{ev.id}")
            == "no_address"
        )
        assert await send_due(db, notify_settings, clock=CLOCK) == 0


class TestDecision:
    async def test_case_decided(self, db: DB, smtp: NotifySettings, sink: Sink) -> None:
        account = await pr_lodging(db, smtp)
        data = {
            "case_id": "case-1",
            "step_id": "step-1",
            "tax_account": account,
            "jurisdiction": "PR",
            "period": "2026-10",
            "notice_id": "n-1",
            "step": "decided",
            "on": "2026-12-15",
            "by": "user:u1",
            "outcome": "reduce",
            "reasons": "Se probó la ocupación real.",
            "amounts": {"tax": "800.00"},
            "appeal_deadline": "2027-01-14",
            "section": "PR Act 272-2003 §32",
        }
        await apply(db, smtp, event("roomtax.assessment.case.step.recorded.v1", data))
        # a step that is not a decision sends nothing
        await apply(
            db,
            smtp,
            event(
                "roomtax.assessment.case.step.recorded.v1",
                {**data, "step_id": "s2", "step": "under_review", "outcome": None},
            ),
        )
        assert await send_due(db, smtp, clock=CLOCK) == 1
        [(_, msg)] = sink.messages
        body = msg.get_content().replace("\r\n", "\n")
        assert msg["Subject"] == f"Decisión sobre su caso para Hotel El Faro ({account}), periodo 2026-10"
        assert "periodo 2026-10: se reduce la determinación." in body
        assert "impuesto: $800.00" in body
        assert "Puede apelar hasta el 14 de enero de 2027." in body


class TestReceiptOnRequest:
    async def test_receipt_once_and_only_for_the_payer_or_operator(
        self, client: httpx.AsyncClient, db: DB, smtp: NotifySettings, sink: Sink
    ) -> None:
        account = await pr_lodging(db, smtp)
        payment = {
            "payment_id": "pay-1",
            "tax_account": account,
            "jurisdiction": "PR",
            "amount": "900.00",
            "method": "ach",
            "received_on": "2026-12-08",
            "payer_kind": "operator",
            "payer_id": "op-m",
            "periods": [{"period": "2026-11", "amount": "900.00"}],
        }
        await apply(db, smtp, event("roomtax.filing.payment.received.v1", payment))
        assert (await client.post("/v1/payments/pay-1/receipt-email", headers=OTHER)).status_code == 404
        assert (await client.post("/v1/payments/nope/receipt-email", headers=OP)).status_code == 404
        first = await client.post("/v1/payments/pay-1/receipt-email", headers=OP)
        again = await client.post("/v1/payments/pay-1/receipt-email", headers=OP)
        assert (first.status_code, first.json()) == (
            202,
            {"message_key": "receipt:pay-1:operator:op-m", "queued": True},
        )
        assert again.json()["queued"] is False
        assert await send_due(db, smtp, clock=CLOCK) == 1
        [(_, msg)] = sink.messages
        assert msg["Subject"] == f"Recibo de su pago de $900.00 ({account})"
        body = msg.get_content().replace("\r\n", "\n")
        assert "por transferencia ACH. Referencia del pago: pay-1." in body
        assert "Aplicado según designado al periodo 2026-11: $900.00" in body
        assert "Recibo emitido a solicitud (PR Act 272-2003 §28(C))." in body
        listed = (await client.get("/v1/emails", headers=OP)).json()["items"]
        assert [(m["kind"], m["status"]) for m in listed] == [("receipt", "sent")]
        assert (await client.get("/v1/emails", headers=OTHER)).json()["items"] == []


class TestPlansAndAudits:
    async def test_plan_granted_with_its_schedule_in_spanish(
        self, db: DB, smtp: NotifySettings, sink: Sink
    ) -> None:
        account = await pr_lodging(db, smtp)
        ev = event("roomtax.assessment.plan.granted.v1", plan_granted(account))
        assert await apply(db, smtp, ev) == "applied"
        assert await apply(db, smtp, ev) == "duplicate"
        assert await send_due(db, smtp, clock=CLOCK) == 1
        [(rcpt, msg)] = sink.messages
        assert rcpt == ["owner@faro.example"]
        assert msg["Subject"] == f"Se concedió su plan de pagos para Hotel El Faro ({account})"
        body = msg.get_content().replace("\r\n", "\n")
        for line in (
            f"Se concedió un plan de pagos (plan-1) el 1 de diciembre de 2026 para Hotel El Faro, número de "
            f"cuenta {account}, periodos 2026-08, 2026-09: $3,000.00, el balance al 1 de diciembre de 2026.",
            "- Pago inicial, vence el 10 de diciembre de 2026: $1,000.00\n"
            "- Plazo 1, vence el 10 de enero de 2027: $1,000.00\n"
            "- Plazo 2, vence el 10 de febrero de 2027: $1,000.00\n",
            "un plazo sin pagar 15 días después de su vencimiento termina el plan",
            "Base legal: PR Act 272-2003 §3, §33.",
            "Está disponible en el portal del contribuyente: https://portal.roomtax.example/",
        ):
            assert line in body

    async def test_plan_defaulted_and_declined_in_english_in_the_virgin_islands(
        self, db: DB, smtp: NotifySettings, sink: Sink
    ) -> None:
        await operator(db, smtp, operator_id="op-vi", email="desk@reef.example", name="Reef Inn")
        account = await lodging(db, smtp, operator_id="op-vi", jurisdiction="VI", name="Reef Inn")
        defaulted = {
            "plan_id": "plan-9",
            "tax_account": account,
            "defaulted_on": "2027-01-26",
            "number": 1,
            "due_on": "2027-01-10",
            "unpaid": "412.50",
            "grace_days": 15,
            "notice_ids": ["n-1", "n-2"],
            "section": "33 V.I.C. § 54",
        }
        declined = {
            "request_id": "req-3",
            "tax_account": account,
            "declined_on": "2026-12-02",
            "declined_by": "user:u-1",
            "reasons": "Two plans defaulted this year.",
        }
        await apply(db, smtp, event("roomtax.assessment.plan.defaulted.v1", defaulted))
        await apply(db, smtp, event("roomtax.assessment.plan.request.declined.v1", declined))
        assert await send_due(db, smtp, clock=CLOCK) == 2
        by_subject = {msg["Subject"]: msg.get_content().replace("\r\n", "\n") for _, msg in sink.messages}
        body = by_subject[f"Your payment plan for Reef Inn ({account}) has ended unpaid"]
        assert (
            f"The payment plan plan-9 for Reef Inn, tax account {account}, ended on January 26, 2027: "
            "Installment 1, due January 10, 2027, stayed unpaid ($412.50) for more than 15 days."
        ) in body
        assert "2 notice(s) of deficiency were issued" in body
        assert "Legal basis: 33 V.I.C. § 54." in body
        assert "taxpayer portal:" not in body  # not an official document
        body = by_subject[f"Your payment plan request for Reef Inn ({account}) was declined"]
        assert "declined on December 2, 2026.\n\nReasons: Two plans defaulted this year." in body

    @pytest.mark.parametrize(
        ("jurisdiction", "subject", "expected"),
        [
            (
                "PR",
                "Se devolvió un pago de su plan para Hotel El Faro ({account})",
                "El pago pay-7 del plan de pagos plan-1 para Hotel El Faro, número de cuenta {account}, se "
                "devolvió el 20 de septiembre de 2026: Plazo 1, que vence el 1 de septiembre de 2026 y que "
                "ese pago había pagado, queda otra vez sin pagar ($4,000.00).\n\nPáguelo a más tardar el "
                "20 de septiembre de 2026 para conservar el plan; sin pagar después de ese día, termina el "
                "plan y se reanuda el cobro de los periodos.",
            ),
            (
                "VI",
                "A payment of your plan for Hotel El Faro ({account}) was returned",
                "The payment pay-7 of the payment plan plan-1 for Hotel El Faro, tax account {account}, was "
                "returned on September 20, 2026: Installment 1, due September 1, 2026, which it had paid, is "
                "unpaid again ($4,000.00).\n\nPay it by September 20, 2026 to keep the plan; unpaid after "
                "that day, it ends the plan and collection of the periods resumes.",
            ),
        ],
    )
    async def test_installment_unpaid_again_by_a_returned_payment(
        self, db: DB, smtp: NotifySettings, sink: Sink, jurisdiction: str, subject: str, expected: str
    ) -> None:
        await operator(db, smtp, operator_id="op-m", email="owner@faro.example", name="Faro Hospitality LLC")
        account = await lodging(db, smtp, operator_id="op-m", jurisdiction=jurisdiction, name="Hotel El Faro")
        reopened = {
            "plan_id": "plan-1",
            "tax_account": account,
            "number": 1,
            "amount": "4000.00",
            "due_on": "2026-09-01",
            "paid_on": "2026-08-28",
            "reopened_on": "2026-09-20",
            "unpaid": "4000.00",
            "pay_by": "2026-09-20",
            "reversal_id": "rev-7",
            "payment_id": "pay-7",
        }
        ev = event("roomtax.assessment.plan.installment.reopened.v1", reopened)
        assert await apply(db, smtp, ev) == "applied"
        assert await apply(db, smtp, ev) == "duplicate"
        assert await send_due(db, smtp, clock=CLOCK) == 1
        [(rcpt, msg)] = sink.messages
        assert (rcpt, msg["Subject"]) == (["owner@faro.example"], subject.format(account=account))
        body = msg.get_content().replace("\r\n", "\n")
        assert f"\n\n{expected.format(account=account)}\n\n-- \n" in body, body

    async def test_audit_letters_for_the_records_request_and_the_closing_only(
        self, db: DB, smtp: NotifySettings, sink: Sink
    ) -> None:
        account = await pr_lodging(db, smtp)
        for step, extra in (
            ("opened", {}),
            ("records_requested", {"records_due_on": "2026-12-31"}),
            ("finding", {"period": "2026-07", "additional_tax": "120.00"}),
            ("closed", {"outcome": "no_change"}),
        ):
            await apply(
                db,
                smtp,
                event("roomtax.assessment.audit.step.recorded.v1", audit_step(account, step, **extra)),
            )
        assert await send_due(db, smtp, clock=CLOCK) == 2
        by_subject = {msg["Subject"]: msg.get_content().replace("\r\n", "\n") for _, msg in sink.messages}
        requested = f"Documentos solicitados para la auditoría de Hotel El Faro ({account})"
        closed = f"Se cerró la auditoría de Hotel El Faro ({account})"
        assert sorted(by_subject) == [requested, closed]
        assert (
            "periodos 2026-07, 2026-08 (auditoría audit-1). El 1 de diciembre de 2026 solicitó los "
            "documentos que enumera la carta; entréguelos a más tardar el 31 de diciembre de 2026."
        ) in by_subject[requested]
        assert "se cerró el 1 de diciembre de 2026: sin cambio en lo adeudado." in by_subject[closed]
