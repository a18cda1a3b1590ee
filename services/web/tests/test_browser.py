"""An operator and an agency person walk their journeys in a real browser, in English
and in Spanish, against the real platform (every service a real process)."""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from platform_harness import TODAY, eventually
from playwright.async_api import Browser, expect
from pypdf import PdfReader
from web_browser import (
    LAST_MONTH,
    PASSWORD,
    TWO_MONTHS_AGO,
    WebStack,
    on_the_islands_clock,
    person,
    platform_with_web,
    sign_in,
    sign_out,
    utc_iso,
    walker,
)

from taxcore.periods import Period


@dataclass
class Stack(WebStack):
    lodging: dict[str, Any]
    operator_email: str
    agency_email: str
    operator_user_id: str


@pytest.fixture(scope="module")
async def stack() -> AsyncIterator[Stack]:
    async with platform_with_web("roomtax_e2e_web") as (platform, web, admin):
        op = await admin.post("registry", "/v1/operators", {"name": "Posada Vieques"}, expect=201)
        lodging = await admin.register_lodging(
            op["id"],
            lodging_class="guesthouse",
            name="Posada La Ceiba",
            line1="12 Calle Flamboyán",
            municipality="Vieques",
            room_count=8,
            registered_on=TWO_MONTHS_AGO.first_day.isoformat(),
        )
        operator = await person(admin, "operator", operator_id=op["id"])
        agency = await person(admin, "agency-admin")

        async def filing_knows() -> bool:
            r = await admin.call("GET", "filing", f"/v1/lodgings/{lodging['id']}/periods/{LAST_MONTH}")
            return r.status_code == 200

        await eventually(filing_knows)
        await web.wait_ready()
        yield Stack(platform, web, admin, lodging, operator["email"], agency["email"], operator["id"])


class TestOperatorJourney:
    async def test_files_pays_and_downloads_the_receipt_in_english(
        self, stack: Stack, browser: Browser
    ) -> None:
        w = await walker(browser, stack, "operator-en")
        page = w.page
        await sign_in(w, stack.operator_email)
        await expect(page.locator("h1")).to_have_text("My lodgings")
        await w.check("portal")
        await page.get_by_role("link", name="Posada La Ceiba").click()
        await expect(page.locator("h1")).to_have_text("Posada La Ceiba")
        await w.check("lodging")
        month = LAST_MONTH.first_day.strftime("%B %Y")
        row = page.locator("tr", has=page.locator("th", has_text=month))
        await expect(row).to_contain_text("Missing" if TODAY > _due(LAST_MONTH) else "Not yet due")
        await row.get_by_role("link", name=re.compile("^File")).click()
        await expect(page.locator("h1")).to_have_text("File a declaration")
        labels = await page.locator("fieldset label").all_inner_texts()
        assert labels == [
            "Room revenue",
            "Rooms paid for but not used",
            "Room penalties (no-shows, late cancellations)",
            "Resort and other fees",
            "Surcharges and service charges",
            "Amounts retained by intermediaries",
            "Room nights sold",
            "Tax you computed (optional)",
        ]
        await page.fill("#f-room_revenue", "12345.67")
        await page.fill("#f-room_nights", "80")
        await expect(page.locator("#preview-tax")).to_have_text("$1,111.11")  # 9% of $12,345.67 (§24(B))
        await page.locator("#preview details summary").click()
        await expect(page.locator("#preview ol.trace")).to_contain_text("§24")
        await w.check("file-preview")
        await page.get_by_role("button", name="File the declaration").click()
        await expect(page.locator("#declaration-tax")).to_have_text("$1,111.11")
        await w.check("declaration")
        await page.get_by_role("link", name="Pay this month").click()
        await page.fill("#f-amount", "1111.11")
        await page.select_option("#f-method", "electronic_transfer")
        await page.fill("#f-reference", "ACH-0001")
        await w.check("pay")
        await page.get_by_role("button", name="Record the payment").click()
        await expect(page.locator("main .ok")).to_contain_text("Payment of $1,111.11 received on")
        await w.check("payment")
        async with page.expect_download() as info:
            await page.get_by_role("link", name="Download the receipt (PDF)").click()
        download = await info.value
        pdf = await download.path()
        text = "".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf.read_bytes())).pages)
        assert stack.lodging["tax_account"] in text
        assert "1111.11" in text.replace(",", "")
        await sign_out(page, "signed-out")
        await page.goto(stack.web.url + "/portal")
        await expect(page).to_have_url(re.compile(r"/sign-in\?next=%2Fportal$"))

    async def test_spanish_calendar_and_a_form_error_next_to_its_field(
        self, stack: Stack, browser: Browser
    ) -> None:
        w = await walker(browser, stack, "operator-es")
        page = w.page
        await sign_in(w, stack.operator_email, spanish=True)
        await expect(page.locator("h1")).to_have_text("Mis alojamientos")
        await w.check("portal-es")
        await page.get_by_role("link", name="Posada La Ceiba").click()
        await expect(page.locator("h2").first).to_have_text("Calendario de radicación")
        await expect(page.locator("tbody tr").first).to_contain_text("Radicada a tiempo")
        await w.check("lodging-es")
        await page.goto(f"{stack.web.url}/portal/lodgings/{stack.lodging['id']}/file?period={TWO_MONTHS_AGO}")
        await page.fill("#f-room_revenue", "doce mil")
        await page.get_by_role("button", name="Radicar la planilla").click()
        await expect(page.locator("#e-room_revenue")).to_have_text(
            "Indique un importe en dólares y centavos, como 1234.50."
        )
        await expect(page.locator("#f-room_revenue")).to_have_attribute("aria-invalid", "true")
        await w.check("file-error-es")
        declarations = await stack.admin.get(
            "filing", "/v1/declarations", params={"lodging": stack.lodging["tax_account"]}
        )
        assert [d["period"] for d in declarations["items"]] == [
            str(LAST_MONTH)
        ]  # the bad form changed nothing
        # the services record the person who filed, not only a client
        assert declarations["items"][0]["submitted_by"] == f"person:{stack.operator_user_id}"

    async def test_another_operators_lodging_is_not_found(self, stack: Stack, browser: Browser) -> None:
        other = await stack.admin.post("registry", "/v1/operators", {"name": "Otro"}, expect=201)
        theirs = await stack.admin.register_lodging(
            other["id"],
            name="Hotel Ajeno",
            line1="1 Calle",
            municipality="Ponce",
            room_count=40,
            registered_on=TWO_MONTHS_AGO.first_day.isoformat(),
        )
        w = await walker(browser, stack, "operator-isolation")
        await sign_in(w, stack.operator_email)
        r = await w.page.goto(f"{stack.web.url}/portal/lodgings/{theirs['id']}")
        assert r is not None
        assert r.status == 404
        assert "Hotel Ajeno" not in await w.page.content()
        r = await w.page.goto(f"{stack.web.url}/agency")
        assert r is not None
        assert r.status == 403


def _due(period: Period) -> date:
    from taxcore.periods import due_date

    return due_date("PR", period)


class TestAgencyJourney:
    async def test_overview_search_and_a_statement_with_its_trace(
        self, stack: Stack, browser: Browser
    ) -> None:
        account = stack.lodging["tax_account"]

        async def assessed() -> bool:
            st = await stack.admin.get("assessment", f"/v1/accounts/{account}/statement")
            return any(p["period"] == str(LAST_MONTH) and p["total_paid"] != "0.00" for p in st["periods"])

        await eventually(assessed)
        for lang in ("en", "es"):
            w = await walker(browser, stack, f"agency-{lang}")
            page = w.page
            await sign_in(w, stack.agency_email, spanish=lang == "es")
            title = {"en": "Overview", "es": "Resumen"}[lang]
            await expect(page.locator("h1")).to_have_text(title)
            await expect(page.locator("figure.chart svg")).to_be_visible()
            await expect(page.locator("figure.chart svg rect")).to_have_count(12 * 2 + 2)  # bars + legend
            await expect(page.locator("figure.chart svg rect title", has_text="$1,111.11")).to_have_count(1)
            await expect(page.locator("#collections-table")).to_contain_text("$1,111.11")
            await w.check("overview")
            await page.get_by_role(
                "link", name={"en": "Lodgings", "es": "Alojamientos"}[lang], exact=True
            ).click()
            await page.fill("#f-q", "ceiba")
            await expect(page.locator("#results tbody tr")).to_have_count(1)
            await w.check("search")
            await page.locator("#results").get_by_role("link", name="Posada La Ceiba").click()
            await expect(page.locator("#statement")).to_contain_text("$1,111.11")
            registered = date.fromisoformat(stack.lodging["registered_on"])
            first_entry = {  # the registry's first status entry, its day naming its month
                "en": f"{registered:%b} {registered.day}, {registered.year}: active (registration)",
                "es": f"{registered.day} {SPANISH_MONTHS_SHORT[registered.month - 1]} {registered.year}: "
                "activo (registro)",
            }[lang]
            await expect(page.locator("#registration-history li").first).to_have_text(first_entry)
            total = page.locator("#statement tfoot tr")
            # assessed, paid, balance
            await expect(total).to_contain_text(re.compile(r"\$1,111\.11\s*\$1,111\.11\s*\$0\.00"))
            details = page.locator(f"#explain-{LAST_MONTH}")
            await details.locator("summary").click()
            await expect(details.locator("ol.trace").first).to_contain_text("§24")
            balance = {"en": "paid 1111.11, balance 0.00", "es": "pagado 1111.11, saldo 0.00"}[lang]
            await expect(details.locator("ol.trace").last).to_contain_text(balance)  # the trace's language
            await w.check("statement")
            await sign_out(page, "signed-out")

    async def test_overview_shows_the_indicators_the_api_computes(
        self, stack: Stack, browser: Browser
    ) -> None:
        last = LAST_MONTH
        first = Period(last.year, 1)  # the default window: the calendar year to last month
        window = {"jurisdiction": "PR", "from": str(first), "to": str(last)}

        async def indicators() -> dict[str, Any]:
            found: dict[str, Any] = await stack.admin.get("assessment", "/v1/indicators", params=window)
            return found

        # by hand: the module registers its PR lodgings (Posada La Ceiba; Hotel Ajeno if the
        # isolation test ran first) by last month and opens no audit: coverage 0 of them, 0.00%
        lodgings = await stack.admin.get("registry", "/v1/lodgings", params={"jurisdiction": "PR"})
        registered = str(len(lodgings["items"]))
        assert registered in ("1", "2")

        async def known() -> bool:  # assessment has heard of every one of them
            figures = {f["name"]: f for f in (await indicators())["indicators"]}
            return bool(figures["audit_coverage"]["denominator"] == registered)

        await eventually(known)
        api = await indicators()
        figures = api["indicators"]
        assert len(figures) == 12
        audit = next(f for f in figures if f["name"] == "audit_coverage")
        assert (audit["code"], audit["value"], audit["numerator"], audit["denominator"]) == (
            "P6-13",
            "0.00",
            "0",
            registered,
        )
        for lang in ("en", "es"):
            w = await walker(browser, stack, f"indicators-{lang}")
            page = w.page
            await sign_in(w, stack.agency_email, spanish=lang == "es")
            table = page.locator("#indicators-table")
            es_month = SPANISH_MONTHS[last.month - 1]
            caption = {
                "en": f"Indicators for PR, January {last.year} to {last.first_day.strftime('%B %Y')}",
                "es": f"Indicadores de PR, de enero {last.year} a {es_month} {last.year}",
            }[lang]
            await expect(table.locator("caption")).to_have_text(caption)
            await expect(table.locator("tbody tr")).to_have_count(len(figures))
            for f in figures:
                row = table.locator(f"tr[data-indicator='{f['name']}']")
                cells = [(await c.inner_text()).strip() for c in await row.locator("td").all()]
                parts = [_part(f, "numerator"), _part(f, "denominator")]
                assert cells[:4] == [f["code"], _shown(f, lang), *parts], f["name"]
                definition, whole = _definition(f, lang)  # in the page's language
                assert cells[4] == definition if whole else cells[4].startswith(definition), (
                    f["name"],
                    cells[4],
                )
            row = table.locator("tr[data-indicator='audit_coverage']")
            name = {"en": "Audit coverage", "es": "Cobertura de auditorías"}[lang]
            await expect(row.locator("th")).to_have_text(name)
            await expect(row.locator("td").nth(1)).to_have_text("0%")
            await w.check("indicators")
            # another window, chosen with the form: the API's figures for it
            await page.select_option("#f-ind-jurisdiction", "VI")
            await page.fill("#f-ind-from", str(last))
            await page.fill("#f-ind-to", str(last))
            await page.locator("#indicators-form button").click()
            vi = await stack.admin.get(
                "assessment",
                "/v1/indicators",
                params={"jurisdiction": "VI", "from": str(last), "to": str(last)},
            )
            await expect(table.locator("caption")).to_contain_text("VI")
            for f in vi["indicators"]:
                row = table.locator(f"tr[data-indicator='{f['name']}']")
                await expect(row.locator("td").nth(1)).to_have_text(_shown(f, lang))
                await expect(row.locator("td").nth(3)).to_have_text(_part(f, "denominator"))
            await sign_out(page, "signed-out")


SPANISH_MONTHS = (
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split()
)


SPANISH_REASONS = {
    "nothing_to_measure": "nada que medir en la ventana (el denominador es cero)",
    "no_audit_closed": "ninguna auditoría se cerró en la ventana",
}
#: the Spanish of the definitions with values in full, of the others their opening words
SPANISH_DEFINITIONS = {
    "audit_coverage": "Alojamientos con una auditoría abierta en la ventana ({starts_on} a {ends_on}) como "
    "porcentaje de los alojamientos registrados al último día de la ventana ({jurisdiction} {section}).",
    "audit_yield": "Impuesto adicional tasado por las auditorías cerradas en la ventana ({starts_on} a "
    "{ends_on}): la suma de sus notificaciones de tasación por auditoría (las planillas corregidas por "
    "taxcore menos las radicadas; una auditoría cerrada sin notificación suma 0.00), sobre el número de "
    "auditorías cerradas.",
    "crosscheck_coverage": "Alojamientos-períodos de la ventana para los que un intermediario radicó una "
    "planilla de remesas y cuya planilla del operador se cotejó con ella, como porcentaje de los "
    "alojamientos-períodos con datos de intermediarios ({jurisdiction} {section}).",
    "arrears_to_collections": "Atrasos del impuesto principal al final de la ventana ({end}: el último día "
    "de 'to', o la fecha de corte si es anterior) como porcentaje de la recaudación del año: el principal "
    "impago en ese día de cada período vencido antes de él (sin los períodos dados de baja), sobre todo lo "
    "cobrado (cada componente) con pagos recibidos en los 12 meses que terminan ese día ({year_from} a "
    "{end}).",
    "arrears_older_than_12_months": "La parte de esos atrasos con más de 12 meses: el principal impago de "
    "los períodos vencidos antes del {year_ago}, sobre los atrasos.",
    "on_time_filing_rate": "Declaraciones radicadas a más tardar en la fecha de vencimiento como porcentaje",
    "on_time_payment_rate_by_number": "Pagos completos a más tardar en la fecha de vencimiento",
    "on_time_payment_rate_by_value": "Valor pagado a más tardar en la fecha de vencimiento",
    "crosscheck_findings_rate": "De esos alojamientos-períodos cotejados, el porcentaje",
    "disputes_opened": "Disputas de notificaciones de deficiencia (casos) abiertas en la ventana "
    "(PR §13-§15, §34; VI §54(d)).",
    "median_days_to_decision": "Mediana de días naturales desde la apertura de un caso hasta su decisión",
    "median_days_refund_request_to_payment": "Mediana de días naturales desde la solicitud de un reintegro",
}
SPANISH_MONTHS_SHORT = "ene feb mar abr may jun jul ago sep oct nov dic".split()


def _day(iso: str, lang: str) -> str:
    """A day as the page writes it in the definitions: Dec 1, 2026 / 1 dic 2026."""
    d = date.fromisoformat(iso)
    return (
        f"{d:%b} {d.day}, {d.year}"
        if lang == "en"
        else f"{d.day} {SPANISH_MONTHS_SHORT[d.month - 1]} {d.year}"
    )


def _definition(figure: dict[str, Any], lang: str) -> tuple[str, bool]:
    """What the page says a figure counts, and whether that is the whole text: the API's
    English with its days as English writes them; the Spanish written out here (the whole
    text, or its opening words)."""
    days = [v for v in figure["terms"].values() if re.fullmatch(r"\d{4}-\d{2}-\d{2}", v)]
    if lang == "en":
        text = str(figure["definition"])
        for iso in days:
            text = text.replace(iso, _day(iso, "en"))
        return text, True
    terms = {k: _day(v, "es") if v in days else v for k, v in figure["terms"].items()}
    spanish = SPANISH_DEFINITIONS[figure["name"]].format(**terms)
    return spanish, spanish.endswith(".")


def _shown(figure: dict[str, Any], lang: str) -> str:
    """What the page shows for a figure, written out here (not by the web app's code)."""
    value = figure["value"]
    if value is None:
        none = {"en": "none", "es": "ninguno"}[lang]
        reason = figure["reason"] if lang == "en" else SPANISH_REASONS.get(figure["reason_code"])
        return f"{none} ({reason})" if reason else none
    if figure["unit"] == "percent":
        return f"{Decimal(value).normalize():,f}%"  # en-US and es-PR write 12.5% alike
    if figure["unit"] == "amount":
        return f"${Decimal(value):,.2f}"
    return str(value)


def _part(figure: dict[str, Any], part: str) -> str:
    """A numerator or denominator as the page shows it: money with its sign and two decimals,
    a count as an integer, grouped by thousands (en-US and es-PR alike)."""
    value, unit = figure[part], figure[f"{part}_unit"]
    if value is None:
        return ""
    return f"${Decimal(value):,.2f}" if unit == "amount" else f"{int(value):,}"


class TestContentSecurityPolicy:
    async def test_pages_run_under_the_policy_without_violations(
        self, stack: Stack, browser: Browser
    ) -> None:
        context = await browser.new_context()
        page = await context.new_page()
        refused: list[str] = []
        page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
        await page.goto(stack.web.url + "/sign-in")
        await page.fill("#f-email", stack.operator_email)
        await page.fill("#f-password", PASSWORD)
        await page.locator("main button[type=submit]").click()
        await page.goto(f"{stack.web.url}/portal/lodgings/{stack.lodging['id']}/file?period={TWO_MONTHS_AGO}")
        await page.fill("#f-room_revenue", "100.00")
        await expect(page.locator("#preview-tax")).to_have_text("$9.00")  # htmx ran under the CSP
        assert refused == []
        framed = await page.evaluate(
            "async () => (await fetch('/sign-in')).headers.get('content-security-policy')"
        )
        assert "frame-ancestors 'none'" in framed
        await context.close()


class TestDistribution:
    async def test_preview_confirm_post_and_the_csv_report(self, stack: Stack, browser: Browser) -> None:
        w = await walker(browser, stack, "distribution-en")
        page = w.page
        await sign_in(w, stack.agency_email)
        await expect(page.locator("h1")).to_have_text("Overview")
        await page.get_by_role("link", name="Distribution").click()
        await page.select_option("#f-jurisdiction", "PR")
        await page.fill("#f-month", str(LAST_MONTH))
        await page.get_by_role("button", name="Preview").click()
        await expect(page.locator("#run-preview")).to_be_visible()
        # the page shows the service's own computation (this month's payment is next month's run)
        expected = await stack.admin.post(
            "distribution", "/v1/runs", {"jurisdiction": "PR", "month": str(LAST_MONTH), "preview": True}
        )
        await expect(page.locator("#run-collected")).to_have_text(f"${Decimal(expected['collected']):,.2f}")
        await expect(page.locator("#allocations tbody tr")).to_have_count(
            max(1, len(expected["allocations"]))
        )
        await w.check("distribution-preview")
        await page.get_by_role("button", name="Post the run").click()  # not confirmed
        await expect(page.locator("#e-confirm")).to_have_text(
            "Tick the box to confirm the posting; a posted run is final."
        )
        assert (await stack.admin.get("distribution", "/v1/runs"))["items"] == []  # nothing posted
        await page.check("#f-confirm")
        await page.get_by_role("button", name="Post the run").click()
        await expect(page.locator("#run-status")).to_contain_text("Posted on")
        await w.check("distribution-run")
        [listed] = (await stack.admin.get("distribution", "/v1/runs"))["items"]
        posted = await stack.admin.get("distribution", f"/v1/runs/{listed['id']}")
        # when: on the islands' clock, named, in each language; the machine-readable moment in UTC
        status = page.locator("#run-status")
        shown = on_the_islands_clock(posted["posted_at"], "en")
        await expect(status).to_have_text(f"Posted on {shown}.")
        utc = utc_iso(posted["posted_at"])
        await expect(status.locator("time")).to_have_attribute("datetime", utc)
        await page.select_option("#language-switch", "es")
        await page.get_by_role("button", name="Change").click()
        await expect(status).to_have_text(
            f"Contabilizada el {on_the_islands_clock(posted['posted_at'], 'es')}."
        )
        await expect(status.locator("time")).to_have_attribute("datetime", utc)
        await w.check("distribution-run-es")
        await page.select_option("#language-switch", "en")
        await page.get_by_role("button", name="Cambiar").click()
        await expect(status).to_have_text(f"Posted on {shown}.")
        assert (posted["month"], posted["collected"]) == (str(LAST_MONTH), expected["collected"])
        assert posted["allocations"] == expected["allocations"]
        async with page.expect_download() as info:
            await page.get_by_role("link", name="Download the report (CSV)").click()
        rows = (await (await info.value).path()).read_text().splitlines()
        assert rows[0] == "run_id,jurisdiction,month,account,fund,name,rule,section,amount"
        assert all(r.startswith(f"{posted['id']},PR,{LAST_MONTH},") for r in rows[1:])
        allocated = sum((Decimal(r.rsplit(",", 1)[1]) for r in rows[1:]), Decimal("0.00"))
        assert allocated + Decimal(posted["pending"]) == Decimal(posted["collected"])  # the report adds up

        auditor = await person(stack.admin, "agency-auditor")
        r = await walker(browser, stack, "distribution-auditor-es")
        await sign_in(r, auditor["email"], spanish=True)
        await expect(r.page.locator("h1")).to_have_text("Resumen")
        await r.page.get_by_role("link", name="Distribución").click()
        await expect(r.page.locator("#runs tbody tr")).to_have_count(1)
        await expect(r.page.locator("#why-no-post")).to_have_text(
            "Solo un administrador de la agencia previsualiza y contabiliza una corrida."
        )
        await expect(r.page.get_by_role("button", name="Vista previa")).to_have_count(0)
        await expect(r.page.get_by_role("button", name="Contabilizar la corrida")).to_have_count(0)
        await r.check("distribution-es")

        o = await walker(browser, stack, "distribution-operator")
        await sign_in(o, stack.operator_email)
        await expect(o.page.locator("h1")).to_have_text("My lodgings")
        for path in ("/agency/distribution", f"/agency/distribution/runs/{posted['id']}"):
            resp = await o.page.goto(stack.web.url + path)
            assert resp is not None
            assert resp.status == 403, path
