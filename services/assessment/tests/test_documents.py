"""Official documents (PDF): notice of decision, deficiency notice, statement of account.

Each test extracts the PDF's text (pypdf) and asserts the names, amounts and citations
exactly, in English and in Spanish, and leaves page 1 as a PNG in ``.run/documents/``.

The case (PR 2025-01, the figures of ``test_cases.py::TestCaseTimeline``): 100,000.00 of room
revenue at 9% = 9,000.00 of tax due 2025-02-10; a notice on 2025-03-01; 4,046.85 paid on
2025-03-10; the dispute decided on 2025-04-01: the tax reduced to 6,000.00, the balance from
5,299.57 (2025-03-31) to 2,109.12 (2025-04-01).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import pytest
from assessment_factories import ADMIN, Bus, new_account
from casework_factories import MAKER, disputed, today_is

from servicekit.testing import auth, pdf_text, save_first_page

CHECKER = auth("agency-admin", user_id="u-checker")
ADDRESS = {"line1": "1055 Ashford Ave", "line2": None, "municipality": "San Juan", "postal_code": "00907"}


async def decided_case(
    client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch, operator_id: str, **lodging: Any
) -> tuple[str, dict[str, Any]]:
    today_is(monkeypatch, date(2025, 3, 15))
    account, case = await disputed(client, bus, operator_id)
    await bus.lodging(
        account,
        operator_id=operator_id,
        event_type="roomtax.registry.lodging.updated.v1",
        name="Condado Vanderbilt Hotel",
        address=ADDRESS,
        **lodging,
    )
    url = f"/v1/cases/{case['id']}"
    assert (await client.post(f"{url}/review", headers=MAKER)).status_code == 200
    today_is(monkeypatch, date(2025, 4, 1))
    r = await client.post(
        f"{url}/decision",
        json={"outcome": "reduce", "amounts": {"tax": "6000.00"}, "reasons": "comped rooms proven"},
        headers=MAKER,
    )
    assert r.status_code == 200, r.text
    ok = await client.post(
        f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
    )
    assert ok.status_code == 200, ok.text
    return account, case


async def pdf(
    client: httpx.AsyncClient, path: str, headers: dict[str, str], **params: str
) -> tuple[bytes, str]:
    r = await client.get(path, params=params, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/pdf"
    return r.content, r.headers["content-language"]


class TestNoticeOfDecision:
    async def test_spanish_by_default_in_puerto_rico(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account, case = await decided_case(client, bus, monkeypatch, "op-doc-1")
        body, language = await pdf(
            client, f"/v1/cases/{case['id']}/decision.pdf", auth("operator", operator_id="op-doc-1")
        )
        save_first_page(body, "decision-es")
        assert language == "es"
        text = pdf_text(body)
        for expected in (
            # letterhead (agency.name, agency.letterhead: provisional contact lines)
            "Puerto Rico Tourism Company P.O. Box 9023960 San Juan, PR 00902-3960",
            "Teléfono (787) 721-2400",
            # the taxpayer and its mailing address
            "Condado Vanderbilt Hotel 1055 Ashford Ave San Juan 00907",
            f"Cuenta contributiva: {account}",
            "Período: 2025-01",
            f"Caso: {case['id']}",
            "Fecha de la decisión: 1 de abril de 2025",
            "Notificación de decisión",
            "Se reduce la tasación.",
            "Fundamentos: comped rooms proven",
            "Decidido conforme a §14; §15; §34.",
            # the reduced component: assessed 9,000.00 before, decided 6,000.00
            "Impuesto §24; §28(A) $9,000.00 $6,000.00",
            # recomputed on the decision date (test_cases.py): 6,000.00 of tax, 4,046.85 paid
            "Impuesto §24; §28(A) $6,000.00 $4,046.85 $1,953.15",
            "Penalidad / recargo §46 $97.66 $0.00 $97.66",
            "Balance adeudado $2,109.12",
            "Balance antes de la decisión: $5,299.57",
            # the appeal term: cases.appeal_days 30 (provisional), from the decision date
            "Puede apelar esta decisión hasta el 1 de mayo de 2025 (30 días, §15 (Act No. 170 of 1988)).",
            "Este término es una lectura provisional",
            "Cómo y dónde pagar Pague con cheque o giro a la orden de la Compañía de Turismo de Puerto Rico",
            "(§28(A); §29)",
            "Código de verificación:",
            "Página 1 de 1",
            "Intereses §46; §33 $58.31 $0.00 $58.31",
        ):
            assert expected in text, expected
        assert "Notice of decision" not in text

    async def test_english_on_request_and_the_lodgings_preference(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account, case = await decided_case(client, bus, monkeypatch, "op-doc-2", preferred_language="en")
        path = f"/v1/cases/{case['id']}/decision.pdf"
        body, language = await pdf(client, path, MAKER)  # the lodging prefers English
        save_first_page(body, "decision-en")
        assert language == "en"
        text = pdf_text(body)
        for expected in (
            "Notice of decision",
            "The assessment is reduced.",
            "Reasons: comped rooms proven",
            "Decision date: April 1, 2025",
            "Tax §24; §28(A) $9,000.00 $6,000.00",
            "Balance owed $2,109.12",
            "Balance before the decision: $5,299.57",
            "You may appeal this decision until May 1, 2025 (30 days, §15 (Act No. 170 of 1988)).",
            "Page 1 of 1",
        ):
            assert expected in text, expected
        spanish, language = await pdf(client, path, MAKER, lang="es")
        assert language == "es"
        assert "Puede apelar esta decisión hasta el 1 de mayo de 2025" in pdf_text(spanish)

    async def test_the_code_on_the_letter_verifies_and_another_does_not(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _, case = await decided_case(client, bus, monkeypatch, "op-doc-3")
        body, _ = await pdf(client, f"/v1/cases/{case['id']}/decision.pdf", MAKER, lang="en")
        text = pdf_text(body)
        code = text.split("Verification code: ")[1].split(" ")[0]
        assert len(code) == 19
        url = f"/v1/documents/verify/decision/{case['id']}"
        ok = await client.get(url, params={"code": code.lower().replace("-", "")})  # no token needed
        assert ok.status_code == 200
        assert ok.json() == {"valid": True, "kind": "decision", "subject": case["id"]}
        assert f"http://127.0.0.1:8003{url}?code={code}" in text.replace(" ", "")
        wrong = await client.get(f"/v1/documents/verify/statement/{case['id']}", params={"code": code})
        assert wrong.status_code == 404

    async def test_an_undecided_case_has_no_notice_of_decision(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 15))
        _, case = await disputed(client, bus, "op-doc-4")
        r = await client.get(f"/v1/cases/{case['id']}/decision.pdf", headers=MAKER)
        assert r.status_code == 409
        assert r.json()["errors"] == [{"pointer": "#/case/status", "detail": "the case is filed"}]


class TestStatementDocument:
    async def test_a_statement_for_any_date_shows_what_the_api_shows(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account, _ = await decided_case(client, bus, monkeypatch, "op-doc-5")
        path = f"/v1/accounts/{account}/statement.pdf"
        before, _ = await pdf(client, path, ADMIN, as_of="2025-03-31", lang="en")
        after, _ = await pdf(client, path, ADMIN, as_of="2025-04-01")
        save_first_page(after, "statement-es")
        before_text, after_text = pdf_text(before), pdf_text(after)
        for expected in (
            "Statement of account",
            "As of: March 31, 2025",
            "Period 2025-01 · Due date February 10, 2025 · declaration",
            "Tax §24; §28(A) $9,000.00 $4,046.85 $4,953.15",
            "Balance owed $5,299.57",
            "Total paid $4,046.85",
        ):
            assert expected in before_text, expected
        assert "reduce" not in before_text  # a statement dated before the decision ignores it
        for expected in (
            "Estado de cuenta",
            "Al: 1 de abril de 2025",
            "Período 2025-01 · Fecha de vencimiento 10 de febrero de 2025 · declaración",
            "Impuesto §24; §28(A) $6,000.00 $4,046.85 $1,953.15",
            "1 de abril de 2025 reducción · Impuesto §14; §15; §34 comped rooms proven -$3,000.00",
            "Balance adeudado $2,109.12",
            "Pagos recibidos",
            "10 de marzo de 2025",
        ):
            assert expected in after_text, expected
        api = await client.get(
            f"/v1/accounts/{account}/statement", params={"as_of": "2025-04-01"}, headers=ADMIN
        )
        assert api.json()["totals"]["balance"] == "2109.12"

    async def test_another_operators_statement_is_a_404(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = new_account()
        await bus.lodging(account, operator_id="op-doc-6")
        r = await client.get(
            f"/v1/accounts/{account}/statement.pdf", headers=auth("operator", operator_id="op-doc-other")
        )
        assert r.status_code == 404


class TestNoticeLetter:
    async def test_the_deficiency_notice_in_spanish(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 15))
        account, case = await disputed(client, bus, "op-doc-7")
        body, language = await pdf(client, f"/v1/notices/{case['notice_id']}/letter.pdf", ADMIN)
        save_first_page(body, "notice-es")
        assert language == "es"
        text = pdf_text(body)
        notice = (await client.get(f"/v1/notices/{case['notice_id']}", headers=ADMIN)).json()
        total = notice["amounts"]["total"]
        for expected in (
            "Notificación de deficiencia",
            f"Notificación: {case['notice_id']}",
            "Fecha: 1 de marzo de 2025",
            "Razón: unpaid",
            "Impuesto §24; §28(A) $9,000.00",
            f"Total adeudado a la fecha de esta notificación ${Decimal(total):,.2f}",
            "Puede pagar la cantidad adeudada, aceptar esta notificación o impugnarla a más tardar el",
            f"Hotel {account}",
        ):
            assert expected in text, expected
