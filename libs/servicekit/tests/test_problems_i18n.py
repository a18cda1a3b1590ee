"""problem+json in the caller's language: Spanish text for ``Accept-Language: es``; the
type, the status and the JSON pointers (what programs read) never change."""

from __future__ import annotations

import httpx
import pytest
from babel.messages.pofile import read_po

from servicekit import problems_i18n
from servicekit.problems_i18n import language, localize, spanish
from servicekit.testing import auth

H = auth("agency-admin")


class TestLanguage:
    @pytest.mark.parametrize(
        ("header", "lang"),
        [("es", "es"), ("es-PR,es;q=0.9,en;q=0.5", "es"), ("en-US", "en"), ("fr-FR", "en"), (None, "en")],
    )
    def test_negotiated(self, header: str | None, lang: str) -> None:
        assert language(header) == lang


class TestPatterns:
    def test_values_are_kept_and_the_sentence_is_spanish(self) -> None:
        assert spanish("amount: at most 10.00 of credit is refundable on 2026-12-01") == (
            "amount: como máximo 10.00 de crédito es reembolsable al 2026-12-01"
        )

    def test_a_not_found_names_the_thing_in_spanish(self) -> None:
        assert spanish("no abatement request 'ab-1'") == "no existe la solicitud de condonación 'ab-1'"
        assert spanish("no account 'PR-0000001-8'") == "no existe la cuenta 'PR-0000001-8'"

    def test_the_longest_pattern_wins_over_the_field_prefix(self) -> None:
        text = "§34: pay the undisputed 5.00 before disputing the rest (0.00 paid since the notice)"
        assert spanish(text) == (
            "§34: pague los 5.00 no impugnados antes de impugnar el resto "
            "(0.00 pagados desde la notificación)"
        )

    def test_a_payment_plan_refused(self) -> None:
        text = (
            "the down payment and installments add up to 9000.00, not the planned amount 9054.25 "
            "(the balance on 2026-08-01)"
        )
        assert spanish(text) == (
            "el pago inicial y los plazos suman 9000.00, no la cantidad planificada 9054.25 "
            "(el saldo al 2026-08-01)"
        )
        assert spanish("120 installments of 1.00 would be under one cent each") == (
            "120 plazos de 1.00 serían de menos de un centavo cada uno"
        )
        assert spanish("2026-06 already in payment plan p-1, current") == (
            "2026-06 ya está en el plan de pagos p-1, vigente"
        )

    def test_sign_in_and_a_parameter_without_a_value(self) -> None:
        assert spanish("this ID token was already used: sign in again") == (
            "este token de identidad ya se usó: inicie sesión de nuevo"
        )
        assert spanish("too many failed sign-in attempts: wait up to 15 minutes") == (
            "demasiados intentos fallidos de inicio de sesión: espere hasta 15 minutos"
        )
        text = (
            "jurisdiction: VI audits.section has no value on 2020-01-31: first value is effective 2024-01-01"
        )
        assert spanish(text) == (
            "jurisdiction: VI audits.section no tiene valor el 2020-01-31: "
            "el primer valor rige desde el 2024-01-01"
        )

    def test_what_the_catalog_lacks_stays_english(self) -> None:
        assert spanish("something no one wrote down") == "something no one wrote down"

    def test_every_pattern_keeps_its_placeholders(self) -> None:
        with problems_i18n.CATALOG.open("rb") as f:
            catalog = read_po(f, locale="es")
        entries = [(m.id, m.string) for m in catalog if m.id]
        assert len(entries) >= 70
        wrong = [
            (i, s)
            for i, s in entries
            if not s
            or sorted(problems_i18n._PLACEHOLDER.findall(str(i)))
            != sorted(problems_i18n._PLACEHOLDER.findall(str(s)))
        ]
        assert wrong == []

    def test_english_bodies_are_untouched(self) -> None:
        body = {"type": "t", "title": "Not found", "status": 404, "detail": "no case 'x'"}
        assert localize(body, "en") is body


class TestProblemJsonInSpanish:
    async def test_a_domain_error(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/v1/widgets/987654321", headers={**H, "Accept-Language": "es-PR"})
        assert r.status_code == 404
        assert r.headers["content-language"] == "es"
        body = r.json()
        assert (body["type"], body["title"]) == ("https://roomtax.dev/problems/not-found", "No encontrado")
        assert body["detail"] == "no widget 987654321"  # not in the catalog: as the service wrote it

    async def test_request_validation_names_the_field_in_spanish(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/widgets", json={"amount": "1.00"}, headers={**H, "Accept-Language": "es"})
        assert r.status_code == 422
        body = r.json()
        assert body["title"] == "Validación fallida"
        assert body["detail"] == "body/name: Campo obligatorio"
        assert body["errors"] == [{"pointer": "#/body/name", "detail": "Campo obligatorio"}]

    async def test_english_by_default(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/widgets", json={"amount": "1.00"}, headers=H)
        assert (r.headers["content-language"], r.json()["title"]) == ("en", "Validation failed")
        assert r.json()["errors"] == [{"pointer": "#/body/name", "detail": "Field required"}]
