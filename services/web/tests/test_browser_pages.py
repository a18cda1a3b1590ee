"""An online intermediary uploads a remittance schedule and an agency person reads the fund
balances and fiscal-year floors, in a real browser, in English and in Spanish, against the
real platform (every service a real process)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from platform_harness import TODAY, eventually, new_client
from playwright.async_api import Browser, expect
from web_browser import (
    LAST_MONTH,
    TWO_MONTHS_AGO,
    Walker,
    WebStack,
    guesthouse,
    on_the_islands_clock,
    person,
    platform_with_web,
    sign_in,
    utc_iso,
    walker,
)

from taxcore.periods import fiscal_year


@dataclass
class Stack(WebStack):
    lodging: dict[str, Any]
    stranger: dict[str, Any]  # a lodging that never authorized the facilitator
    facilitator: dict[str, Any]
    facilitator_email: str
    other_facilitator_email: str
    operator_email: str
    agency_email: str
    operator_id: str


@pytest.fixture(scope="module")
async def stack() -> AsyncIterator[Stack]:
    async with platform_with_web("roomtax_e2e_webpages") as (platform, web, admin):
        op = await admin.post("registry", "/v1/operators", {"name": "Culebra Stays"}, expect=201)
        lodging = await guesthouse(admin, op["id"], "Casa Flamenco", "3 Calle Muñoz Rivera")
        stranger = await guesthouse(admin, op["id"], "Casa Zoni", "3 Calle Muñoz Rivera")
        fac = await admin.post(
            "registry", "/v1/facilitators", {"name": "Isla Booking", "email": "ota@isla.example"}, expect=201
        )
        other = await admin.post(
            "registry", "/v1/facilitators", {"name": "Otra OTA", "email": "ota@otra.example"}, expect=201
        )
        await admin.post(
            "registry",
            f"/v1/lodgings/{lodging['tax_account']}/authorizations",
            {"facilitator_id": fac["id"], "starts_on": TWO_MONTHS_AGO.first_day.isoformat()},
            expect=201,
        )
        facilitator = await person(admin, "facilitator", facilitator_id=fac["id"])
        other_facilitator = await person(admin, "facilitator", facilitator_id=other["id"])
        operator = await person(admin, "operator", operator_id=op["id"])
        agency = await person(admin, "agency-admin")
        ota = await new_client(platform, admin, "ota-webpages", "facilitator", facilitator_id=fac["id"])

        async def filing_knows_the_authorization() -> bool:
            r = await ota.call("GET", "filing", f"/v1/lodgings/{lodging['id']}/periods/{LAST_MONTH}")
            return r.status_code == 200

        await eventually(filing_knows_the_authorization)
        await ota.close()
        await web.wait_ready()
        yield Stack(
            platform,
            web,
            admin,
            lodging,
            stranger,
            fac,
            facilitator["email"],
            other_facilitator["email"],
            operator["email"],
            agency["email"],
            op["id"],
        )


def _document(stack: Stack) -> str:
    account = stack.lodging["tax_account"]
    return (
        "tax_account,room_revenue,room_nights\n"
        f"{account},1000.00,5\n"  # 9% of $1,000.00 (§24(B))
        f"{stack.stranger['tax_account']},500.00,2\n"  # never authorized the facilitator
        f"{account},12.345,2\n"  # three decimals
        f"{account},100.00,two\n"  # not a whole number
    )


async def _upload(w: Walker, folder: Path, name: str, content: str, button: str) -> None:
    path = folder / name
    path.write_text(content)
    await w.page.set_input_files("#f-file", str(path))
    await w.page.get_by_role("button", name=button).click()


async def _schedules(stack: Stack) -> list[dict[str, Any]]:
    found = await stack.admin.get(
        "filing", "/v1/remittance-schedules", params={"facilitator_id": stack.facilitator["id"]}
    )
    items: list[dict[str, Any]] = found["items"]
    return items


class TestRemittanceSchedulePage:
    async def test_upload_results_rejected_rows_and_the_list_in_english(
        self, stack: Stack, browser: Browser, tmp_path: Path
    ) -> None:
        w = await walker(browser, stack, "schedule-en")
        page = w.page
        await sign_in(w, stack.facilitator_email)
        await page.get_by_role("link", name="Remittance schedules").click()
        await expect(page.locator("h1")).to_have_text("Remittance schedules")
        await w.check("schedules-empty")
        # a file without the header: the error next to the field, nothing filed
        await page.select_option("#f-period", str(LAST_MONTH))
        await _upload(w, tmp_path, "bad.csv", "cuenta,ingresos\nX,1\n", "Upload the schedule")
        await expect(page.locator("#e-file")).to_have_text(
            "The first row must name the columns, tax_account among them."
        )
        await expect(page.locator("#f-file")).to_have_attribute("aria-invalid", "true")
        await w.check("schedules-bad-file")
        assert await _schedules(stack) == []
        await page.select_option("#f-period", str(LAST_MONTH))
        await _upload(w, tmp_path, "schedule.csv", _document(stack), "Upload the schedule")
        month = LAST_MONTH.first_day.strftime("%B %Y")
        await expect(page.locator("h1")).to_have_text(f"Remittance schedule for {month}")
        [listed] = await _schedules(stack)
        api = await stack.admin.get("filing", f"/v1/remittance-schedules/{listed['id']}")
        assert (api["rows"], api["accepted"], api["rejected"]) == (4, 1, 3)
        await expect(page.locator("#schedule-status")).to_have_text("partially accepted")
        rows = page.locator("#rows-table tbody tr")
        await expect(rows).to_have_count(4)
        account, stranger = stack.lodging["tax_account"], stack.stranger["tax_account"]
        await expect(rows.nth(0)).to_contain_text(re.compile(rf"^1\s*{account}\s*accepted\s*\$90\.00"))
        await expect(rows.nth(1).locator("td").last).to_have_text(
            f"Tax account: no lodging '{stranger}' that authorized this facilitator"
        )
        await expect(rows.nth(2).locator("td").last).to_contain_text("Room revenue: ")
        await expect(rows.nth(3).locator("td").last).to_contain_text("Room nights sold: ")
        await w.check("schedule")
        async with page.expect_download() as info:
            await page.get_by_role("link", name="Download the rejected rows (CSV)").click()
        lines = (await (await info.value).path()).read_text(encoding="utf-8-sig").splitlines()
        assert lines[0] == "row,tax_account,field,code,Reason"
        reason = f"no lodging '{stranger}' that authorized this facilitator"
        assert lines[1] == f"2,{stranger},tax_account,not_authorized,{reason}"
        assert [ln.split(",")[:4] for ln in lines[2:]] == [
            ["3", account, "room_revenue", "value_error"],
            ["4", account, "room_nights", "int_parsing"],
        ]
        await page.get_by_role("link", name="All schedules").click()
        table = page.locator("#schedules-table tbody tr")
        await expect(table).to_have_count(1)
        await expect(table).to_contain_text(re.compile(rf"{month}\s*partially accepted\s*4\s*1\s*3"))
        # received: on the islands' clock, named; the machine-readable moment in UTC
        await expect(table.locator("th")).to_have_text(on_the_islands_clock(listed["created_at"], "en"))
        await expect(table.locator("th time")).to_have_attribute("datetime", utc_iso(listed["created_at"]))
        await w.check("schedules")

    async def test_spanish_reasons_by_code_and_a_form_error(
        self, stack: Stack, browser: Browser, tmp_path: Path
    ) -> None:
        w = await walker(browser, stack, "schedule-es")
        page = w.page
        await sign_in(w, stack.facilitator_email, spanish=True)
        await page.get_by_role("link", name="Anexos de remesa").click()
        await expect(page.locator("h1")).to_have_text("Anexos de remesa")
        before = await _schedules(stack)
        await _upload(w, tmp_path, "empty.csv", "tax_account,room_revenue\n", "Subir el anexo")
        await expect(page.locator("#e-file")).to_have_text("El archivo tiene encabezado pero ninguna fila.")
        await w.check("schedules-bad-file-es")
        assert await _schedules(stack) == before
        if not before:  # this test alone: the English test's schedule is not there yet
            await page.select_option("#f-period", str(LAST_MONTH))
            await _upload(w, tmp_path, "schedule.csv", _document(stack), "Subir el anexo")
            await page.get_by_role("link", name="Todos los anexos").click()
        latest = (await _schedules(stack))[0]
        first = page.locator("#schedules-table tbody tr").first
        await expect(first.locator("th")).to_have_text(on_the_islands_clock(latest["created_at"], "es"))
        await expect(first.locator("th time")).to_have_attribute("datetime", utc_iso(latest["created_at"]))
        await w.check("schedules-es")
        await first.get_by_role("link").click()
        await expect(page.locator("#schedule-status")).to_have_text("aceptado en parte")
        rows = page.locator("#rows-table tbody tr")
        await expect(rows.nth(0).locator("td").nth(1)).to_have_text("aceptada")
        await expect(rows.nth(1).locator("td").last).to_have_text(
            "Cuenta contributiva: Ningún alojamiento con esta cuenta contributiva le ha autorizado "
            "a declarar por él."
        )
        await expect(rows.nth(2).locator("td").last).to_have_text(
            "Ingresos por habitaciones: Indique un importe en dólares y centavos, como 1234.50."
        )
        await expect(rows.nth(3).locator("td").last).to_have_text(
            "Noches-habitación vendidas: Escriba un número entero."
        )
        await w.check("schedule-es")
        async with page.expect_download() as info:
            await page.get_by_role("link", name="Descargar las filas rechazadas (CSV)").click()
        lines = (await (await info.value).path()).read_text(encoding="utf-8-sig").splitlines()
        assert lines[0] == "row,tax_account,field,code,Motivo"
        assert (
            lines[3] == f"4,{stack.lodging['tax_account']},room_nights,int_parsing,Escriba un número entero."
        )

    async def test_another_facilitator_cannot_see_the_schedule(self, stack: Stack, browser: Browser) -> None:
        theirs = await _schedules(stack)
        if not theirs:
            row = {"tax_account": stack.lodging["tax_account"], "room_revenue": "10.00", "room_nights": 1}
            await stack.admin.post(
                "filing",
                "/v1/remittance-schedules",
                {"period": str(LAST_MONTH), "facilitator_id": stack.facilitator["id"], "rows": [row]},
                expect=201,
            )
            theirs = await _schedules(stack)
        schedule_id = theirs[0]["id"]
        w = await walker(browser, stack, "schedule-isolation")
        await sign_in(w, stack.other_facilitator_email)
        await w.page.get_by_role("link", name="Remittance schedules").click()
        await expect(w.page.locator("main")).to_contain_text("You have not uploaded a schedule yet.")
        for path in (f"/portal/schedules/{schedule_id}", f"/portal/schedules/{schedule_id}/rejected.csv"):
            r = await w.page.goto(stack.web.url + path)
            assert r is not None
            assert r.status == 404, path
            await expect(w.page.locator("h1")).to_have_text("Not found")
            assert stack.lodging["tax_account"] not in await w.page.content()
        o = await walker(browser, stack, "schedule-operator")
        await sign_in(o, stack.operator_email)
        await expect(o.page.locator("h1")).to_have_text("My lodgings")
        await expect(o.page.get_by_role("link", name="Remittance schedules")).to_have_count(0)
        r = await o.page.goto(stack.web.url + "/portal/schedules")
        assert r is not None
        assert r.status == 403


def _money(value: str) -> str:
    """``1234.5`` as en-US and es-PR both write it: ``$1,234.50`` (by hand, not the app's code)."""
    amount = Decimal(value)
    return f"-${-amount:,.2f}" if amount < 0 else f"${amount:,.2f}"


class TestFundsAndFloors:
    async def test_fund_balances_chart_and_table_in_both_languages(
        self, stack: Stack, browser: Browser
    ) -> None:
        account = stack.lodging["tax_account"]
        body = {
            "tax_account": account,
            "amount": "90.00",
            "method": "electronic_transfer",
            "periods": [{"period": str(LAST_MONTH), "amount": "90.00"}],
            "payer": {"kind": "operator", "id": stack.operator_id},
        }
        await stack.admin.post("filing", "/v1/payments", body, expect=201)

        async def collected() -> dict[str, Any] | None:
            found: dict[str, Any] = await stack.admin.get(
                "distribution", "/v1/funds", params={"jurisdiction": "PR"}
            )
            return found if found["collected"] == "90.00" else None

        api = await eventually(collected)
        assert (api["pending"], api["distributed"], api["conserved"]) == ("90.00", "0.00", True)
        spanish = {
            "fund:pr_treasury_general_fund": "Fondo General del Departamento de Hacienda",
            "pending:PR": "Recaudaciones pendientes de distribución",
        }
        for lang in ("en", "es"):
            w = await walker(browser, stack, f"funds-{lang}")
            page = w.page
            await sign_in(w, stack.agency_email, spanish=lang == "es")
            await page.get_by_role("link", name={"en": "Distribution", "es": "Distribución"}[lang]).click()
            await page.get_by_role(
                "link", name={"en": "Fund balances", "es": "Saldos de los fondos"}[lang]
            ).first.click()
            await expect(page.locator("figure.chart svg rect")).to_have_count(len(api["accounts"]) + 1)
            rows = page.locator("#funds-table tbody tr")
            await expect(rows).to_have_count(len(api["accounts"]))
            for i, a in enumerate(api["accounts"]):
                name = a["name"] if lang == "en" else spanish.get(a["account"])
                cells = rows.nth(i)
                await expect(cells.locator("th")).to_have_attribute("title", a["account"])
                if name:
                    await expect(cells.locator("th")).to_have_text(name)
                await expect(cells.locator("td").nth(1)).to_have_text(_money(a["balance"]))
                await expect(cells.locator("td").nth(2)).to_have_text(a["section"] or "")
            await expect(page.locator("#funds-pending")).to_have_text("$90.00")
            await expect(page.locator("#funds-collected")).to_have_text("$90.00")
            conserved = {
                "en": "Distributed plus pending equals collected, to the cent.",
                "es": "Lo distribuido más lo pendiente es igual a lo recaudado, al centavo.",
            }[lang]
            await expect(page.locator("#funds-conserved")).to_have_text(conserved)
            await w.check("funds")
            await page.get_by_role(
                "link", name={"en": "Fiscal-year floors", "es": "Mínimos del año fiscal"}[lang]
            ).first.click()
            await self._floors(stack, w, lang)

    async def _floors(self, stack: Stack, w: Walker, lang: str) -> None:

        page = w.page
        year = fiscal_year("PR", TODAY)
        api = await stack.admin.get(
            "distribution", f"/v1/fiscal-years/{year}/summary", params={"jurisdiction": "PR"}
        )
        title = {"en": f"Fiscal year {year}, PR", "es": f"Año fiscal {year}, PR"}[lang]
        await expect(page.locator("#floors-title")).to_have_text(title)
        floored = [f for f in api["funds"] if f["floor"]]
        assert [f["account"] for f in floored] == ["fund:pr_convention_bureau"]
        rows = page.locator("#floors-table tbody tr")
        await expect(rows).to_have_count(len(api["funds"]))
        bureau, floor = rows.nth(0), floored[0]["floor"]
        assert floor["annual"] == "4500000.00"  # §31(B)(iii): the Convention Bureau's annual floor
        cells = [(await c.inner_text()).strip() for c in await bureau.locator("td").all()]
        status = {"en": ("met", "on track", "behind"), "es": ("cumplido", "al día", "atrasado")}[lang]
        assert cells[:5] == [
            "1",
            _money(floored[0]["received"]),
            "$4,500,000.00",
            _money(floor["owed_to_date"]),
            _money(floor["shortfall_to_date"]),
        ]
        expected = status[0] if floor["met"] else status[1] if floor["on_track"] else status[2]
        assert cells[6] == expected
        assert cells[7].startswith(floor["section"])
        # bars: received, owed to date, annual floor for the one fund, and three legend keys
        await expect(page.locator("figure.chart svg rect")).to_have_count(3 + 3)
        await expect(page.locator("figure.chart svg rect title", has_text="$4,500,000.00")).to_have_count(1)
        await w.check("floors")
