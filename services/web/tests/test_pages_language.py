"""What the services send by code is read in the person's language, and people by name.

The texts the services write in English (a timeline entry, a finding, a collection hold,
a schedule row's reason, a fund's name) are translated by their code, never by matching
the English; the people the services record by id are looked up at the real registry.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.requests import Request
from web_factories import ADMIN, PASSWORD, make_person, web_settings

from taxcore.rules.check import Finding
from web.app import templates
from web.backend import Backend
from web.core import Api
from web.i18n import Lang
from web.pages.schedules import column_label, reason_text
from web.people import refs_in, resolve, user_id_of

EN, ES = Lang("en"), Lang("es")


class TestTimeline:
    def test_english_is_the_service_summary_spanish_is_by_kind(self) -> None:
        paid = {"kind": "payment.received", "summary": "payment by check"}
        assert (EN.timeline(paid), ES.timeline(paid)) == ("payment by check", "Pago recibido")
        decided = {"kind": "case.decided", "summary": "case decided sustain"}
        assert ES.timeline(decided) == "Caso: decidido"
        approved = {
            "kind": "proposal.approved",
            "summary": "decision approved: Conforme.",
            "note": "Conforme.",
        }
        assert ES.timeline(approved) == "Propuesta: aprobado: Conforme."  # a person's words as written
        plan = {"kind": "plan.defaulted", "summary": "payment plan defaulted"}
        assert ES.timeline(plan) == "Plan de pago: incumplido"
        back = {
            "kind": "plan.installment_reopened",
            "summary": "installment 1 unpaid again: the payment was returned; 4000.00 to pay by 2026-09-16",
        }
        assert (EN.timeline(back), ES.timeline(back)) == (
            back["summary"],
            "Plan de pago: plazo otra vez sin pagar (pago devuelto)",
        )
        paid_again = {"kind": "plan.installment_paid", "summary": "installment 1 paid"}
        assert ES.timeline(paid_again) == "Plan de pago: plazo pagado"
        undone = {"kind": "plan.reopened", "summary": "payment plan not completed any more"}
        assert ES.timeline(undone) == "Plan de pago: ya no está completado (pago devuelto)"
        # a kind the web app does not know keeps the service's words
        assert ES.timeline({"kind": "novel.thing", "summary": "something new"}) == "something new"


class TestFindings:
    def test_a_finding_by_its_code_with_its_line_and_amounts(self) -> None:
        finding = {
            "code": "tax_understated",
            "line": "tax",
            "message": "declared tax 90.00; the declaration's lines come to 111.11",
            "declared": "90.00",
            "computed": "111.11",
            "section": "§2(18)",
        }
        assert EN.finding(finding) == finding["message"]
        assert ES.finding(finding) == "Declaró impuesto de $90.00; las líneas de la planilla suman $111.11."
        omission = {**finding, "code": "omission", "line": "exempt[0].evidence", "declared": "50.00"}
        assert (
            ES.finding(omission) == "Omisión en exenciones: falta la evidencia, así que no se admiten $50.00."
        )
        # a preview shows taxcore's own Finding, not the API's JSON
        preview = Finding.model_validate(
            {**finding, "declared": Decimal("90.00"), "computed": Decimal("111.11")}
        )
        assert (EN.finding(preview), ES.finding(preview)) == (EN.finding(finding), ES.finding(finding))
        revenue = {**finding, "code": "arithmetic", "line": "room_revenue"}
        assert ES.finding(revenue) == (
            "Error aritmético en Ingresos por habitaciones: declaró $90.00, las líneas suman $111.11."
        )


class TestCollectionHold:
    def test_the_hold_by_its_code_and_date(self) -> None:
        case = {
            "collection_hold": "case c-1: the term to appeal runs until 2025-05-10",
            "collection_hold_reason": {"code": "appeal_term", "case_id": "c-1", "on": "2025-05-10"},
        }
        assert EN.hold(case) == "case c-1: the term to appeal runs until 2025-05-10"
        assert ES.hold(case) == "el plazo para apelar vence el 10 de mayo de 2025"
        undecided = {
            "collection_hold": "case c-1: the dispute is not decided",
            "collection_hold_reason": {"code": "not_decided", "case_id": "c-1", "on": None},
        }
        assert ES.hold(undecided) == "la disputa no está decidida"
        assert ES.hold({"collection_hold": "older text", "collection_hold_reason": None}) == "older text"


class TestAccountNames:
    def test_funds_by_code_in_spanish_and_the_service_name_in_english(self) -> None:
        name = "General Fund of the Department of the Treasury"
        assert EN.account_name("fund:pr_treasury_general_fund", name) == name
        assert ES.account_name("fund:pr_treasury_general_fund", name) == (
            "Fondo General del Departamento de Hacienda"
        )
        assert ES.account_name("pending:VI", "Collections pending distribution (VI)") == (
            "Recaudaciones pendientes de distribución"
        )
        assert ES.account_name("fund:xx_new_fund", "A new fund") == "A new fund"


class TestScheduleReasons:
    def test_reasons_by_code_with_the_column_label(self) -> None:
        unknown = {"field": "tax_account", "reason": "no lodging 'PR-1' that authorized this facilitator"}
        assert reason_text(EN, {**unknown, "code": "not_authorized"}) == unknown["reason"]
        assert reason_text(ES, {**unknown, "code": "not_authorized"}) == (
            "Ningún alojamiento con esta cuenta contributiva le ha autorizado a declarar por él."
        )
        money = {"field": "room_revenue", "reason": "Value error, an amount is…", "code": "value_error"}
        assert reason_text(ES, money) == "Indique un importe en dólares y centavos, como 1234.50."
        assert reason_text(ES, {"field": "room_nights", "reason": "x", "code": "int_parsing"}) == (
            "Escriba un número entero."
        )
        # a schedule filed before the codes: the problems catalog, else the English as it is
        assert reason_text(ES, {"field": "room_nights", "reason": "Field required"}) == "Campo obligatorio"
        assert (column_label(ES, "room_nights"), column_label(ES, None)) == (
            "Noches-habitación vendidas",
            "Fila",
        )
        assert column_label(ES, "some_new_column") == "some_new_column"


class TestPeopleRefs:
    def test_the_ids_the_services_write(self) -> None:
        assert [user_id_of(r) for r in ("user:u-1", "person:u-2", "u-3", "client:c-1", "")] == [
            "u-1",
            "u-2",
            "u-3",
            None,
            None,
        ]
        data: list[Any] = [
            {"by": "user:a", "steps": [{"by": "user:b", "details": {"approved_by": "c"}}]},
            {"proposed_by": "d", "reviewed_by": None, "summary": "by hand"},
        ]
        assert refs_in(data) == {"user:a", "user:b", "c", "d"}


async def _api(registry_app: FastAPI, role: str, **binding: str) -> tuple[Api, dict[str, Any]]:
    """A web ``Api`` bound to a person signed in at the real registry."""
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=registry_app))
    who = await make_person(registry_app, role, name=f"Nilda {role}", **binding)
    signed = await registry_app.state.test_client.post(
        "/v1/people/token", json={"email": who["email"], "password": PASSWORD}
    )
    assert signed.status_code == 200, signed.text
    api = Api.__new__(Api)
    api.backend = Backend(web_settings(registry_url="http://registry.test"), client)
    api.token, api.lang = signed.json()["access_token"], "en"
    return api, who


def _request() -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "headers": []})


class TestPeopleByName:
    @pytest.mark.parametrize("role", ["agency-auditor", "agency-officer"])
    async def test_names_with_ids_an_unknown_person_and_a_client(
        self, registry_app: FastAPI, role: str
    ) -> None:
        api, me = await _api(registry_app, role)
        other = await make_person(registry_app, "agency-admin", name="Rubén Colón")
        missing = f"u-{uuid.uuid4().hex[:8]}"
        request = _request()
        steps = [{"by": f"user:{other['id']}"}, {"by": f"user:{missing}"}, {"by": "client:pms-1"}]
        data = {"steps": steps, "issued_by": "agency-admin"}  # a client's id, written bare
        found = await resolve(request, api, data, {"proposed_by": other["id"], "reviewed_by": me["id"]})
        assert {r: (n.name, n.user_id, n.unknown) for r, n in found.items()} == {
            f"user:{other['id']}": ("Rubén Colón", other["id"], False),
            other["id"]: ("Rubén Colón", other["id"], False),
            me["id"]: (f"Nilda {role}", me["id"], False),
            f"user:{missing}": (None, missing, True),
            "client:pms-1": (None, None, False),
            "agency-admin": (None, "agency-admin", False),
        }
        html = (
            templates()
            .from_string(
                '{% from "_people.html" import who with context %}{{ who(a) }}|{{ who(b) }}|{{ who(c) }}'
            )
            .render(request=request, a=other["id"], b=f"user:{missing}", c="client:pms-1", **ES.helpers())
        )
        assert html == (
            f'<span class="person" title="{other["id"]}">Rubén Colón</span>|'
            f'<span class="person" title="{missing}">Persona desconocida ({missing})</span>|client:pms-1'
        )
        await api.backend.client.aclose()

    async def test_a_role_that_may_not_read_people_sees_the_ids(self, registry_app: FastAPI) -> None:
        api, _ = await _api(registry_app, "dashboard")
        other = await make_person(registry_app, "agency-admin")
        assert (
            await registry_app.state.test_client.get(f"/v1/people/users/{other['id']}", headers=ADMIN)
        ).status_code == 200
        found = await resolve(_request(), api, {"by": f"user:{other['id']}"})
        assert {r: (n.name, n.unknown) for r, n in found.items()} == {f"user:{other['id']}": (None, False)}
        await api.backend.client.aclose()


class TestLodgingClasses:
    def test_a_class_code_as_words(self) -> None:
        assert (EN.word("short_term_rental"), ES.word("short_term_rental")) == (
            "short-term rental",
            "alquiler a corto plazo",
        )
        assert (EN.word("guesthouse"), ES.word("guesthouse")) == ("guesthouse", "casa de huéspedes")
