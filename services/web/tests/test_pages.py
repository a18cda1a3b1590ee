"""Templates render from API-shaped data: the overview's chart and its table agree."""

from __future__ import annotations

import html as html_text
import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from taxcore.periods import Period
from web.app import templates
from web.chart import bar_chart
from web.i18n import Lang
from web.pages.agency import indicator_window

TEMPLATES = Path(__file__).resolve().parents[1] / "web" / "templates"
MONTHS = [f"2026-{m:02d}" for m in range(1, 13)]


INDICATORS = {
    "indicators": [
        {
            "code": "P4-10",
            "name": "on_time_filing_rate",
            "value": "62.50",
            "unit": "percent",
            "numerator": "1250",
            "denominator": "2000",
            "numerator_unit": "count",
            "denominator_unit": "count",
            "definition": "Declarations filed by the due date as a percentage (the API's English)",
            "terms": {},
            "reason": None,
            "reason_code": None,
        },
        {
            "code": "P6-13",
            "name": "audit_yield",
            "value": None,
            "unit": "amount",
            "numerator": "0.00",
            "denominator": "0",
            "numerator_unit": "amount",
            "denominator_unit": "count",
            "definition": "Additional tax assessed by the audits closed in the window (the API's English)",
            "terms": {"starts_on": "2026-01-01", "ends_on": "2026-11-30"},
            "reason": "no audit was closed in the window",
            "reason_code": "no_audit_closed",
        },
        {
            "code": "P5-12",
            "name": "arrears_to_collections",
            "value": "1234.50",
            "unit": "amount",
            "numerator": "19500.00",
            "denominator": "21000.00",
            "numerator_unit": "amount",
            "denominator_unit": "amount",
            "definition": "Arrears (the API's English)",
            "terms": {"end": "2026-11-30", "year_from": "2025-12-01"},
            "reason": None,
            "reason_code": None,
        },
        {
            "code": "P9",
            "name": "a_new_indicator",
            "value": None,
            "unit": "count",
            "numerator": None,
            "denominator": None,
            "definition": "One this web app does not know yet",
            "terms": {"on": "2026-11-30"},
            "reason": "a reason this web app does not know yet",
            "reason_code": "a_new_reason",
        },
    ]
}


def overview(lang: Lang, indicators: dict[str, Any] | None = None) -> str:
    collected = {"PR": [Decimal(0)] * 11 + [Decimal("12345.67")], "VI": [Decimal("500.00")] * 12}
    chart = bar_chart(
        MONTHS,
        collected,
        category_label={m: lang.date(m + "-01", "MMM yy") for m in MONTHS},
        value_label=lang.money,
        tick_label=lambda v: lang.money(v.quantize(Decimal(1))),
    )
    return (
        templates()
        .get_template("agency/overview.html")
        .render(
            lang=lang.code,
            languages={},
            person=None,
            csrf_token="t",
            form_id="f",
            here="/agency",
            **lang.helpers(),
            months=MONTHS,
            collected=collected,
            assessed=collected,
            chart=chart,
            aging={"as_of": "2026-12-01", "rows": [], "totals": {}},
            delinquents=[],
            funds=[
                {
                    "jurisdiction": "PR",
                    "as_of": "2026-12-01",
                    "accounts": [
                        {
                            "account": "fund:pr_convention_bureau",
                            "name": "Convention Bureau",
                            "section": "§31(B)",
                            "balance": "900.00",
                        }
                    ],
                    "collected": "12345.67",
                    "pending": "11445.67",
                }
            ],
            jurisdictions=("PR", "VI"),
            indicators=INDICATORS if indicators is None else indicators,
            window={"jurisdiction": "VI", "from": "2026-01", "to": "2026-11"},
        )
    )


def cells(html: str, name: str) -> list[str]:
    row = re.search(rf'<tr data-indicator="{name}">(.*?)</tr>', html, re.S)
    assert row is not None, name
    return [
        html_text.unescape(re.sub(r"<[^>]+>", "", c)).strip()
        for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row.group(1), re.S)
    ]


class TestIndicators:
    def test_each_figure_with_its_code_value_parts_and_definition(self) -> None:
        html = overview(Lang("en"))
        assert "<caption>Indicators for VI, January 2026 to November 2026</caption>" in html
        assert cells(html, "on_time_filing_rate") == [
            "On-time filing rate",
            "P4-10",
            "62.5%",
            "1,250",
            "2,000",
            "Declarations filed by the due date as a percentage of the declarations expected: every "
            "lodging-period of the window that must file (taxcore obligations.must_file: a month with an "
            "active day after registration) and whose due date is before as_of; a declaration counts when "
            "a filer that meets the lodging's obligation (obligations.declaration_filers) filed it on or "
            "before the due date (PR §28; VI §54(f)).",
        ]
        assert cells(html, "audit_yield") == [
            "Additional tax per closed audit",
            "P6-13",
            "none (no audit was closed in the window)",
            "$0.00",
            "0",
            "Additional tax assessed by the audits closed in the window (Jan 1, 2026 to Nov 30, 2026): the "
            "sum of their notices of audit assessment (taxcore's corrected returns less the filed ones; an "
            "audit closed without a notice adds 0.00), over the number of audits closed.",
        ]
        assert cells(html, "arrears_to_collections")[2:5] == ["$1,234.50", "$19,500.00", "$21,000.00"]
        assert cells(html, "arrears_to_collections")[5].endswith(
            "received in the 12 months ending that day (Dec 1, 2025 to Nov 30, 2026)."
        )
        # an indicator or a reason newer than this app: the API's English, as it came
        assert cells(html, "a_new_indicator")[2:] == [
            "none (a reason this web app does not know yet)",
            "",
            "",
            "One this web app does not know yet",
        ]
        assert '<option value="VI" selected>' in html

    def test_spanish_names_and_a_refused_window(self) -> None:
        html = overview(Lang("es"))
        assert cells(html, "on_time_filing_rate")[:5] == [
            "Tasa de declaraciones a tiempo",
            "P4-10",
            "62.5%",
            "1,250",
            "2,000",
        ]
        assert cells(html, "arrears_to_collections")[2:5] == ["$1,234.50", "$19,500.00", "$21,000.00"]
        yield_ = cells(html, "audit_yield")
        assert yield_[2:5] == ["ninguno (ninguna auditoría se cerró en la ventana)", "$0.00", "0"]
        assert yield_[5].startswith(
            "Impuesto adicional tasado por las auditorías cerradas en la ventana (1 ene 2026 a 30 nov 2026): "
        )
        assert cells(html, "arrears_to_collections")[5].endswith(
            "con pagos recibidos en los 12 meses que terminan ese día (1 dic 2025 a 30 nov 2026)."
        )
        assert "<caption>Indicadores de VI, de enero 2026 a noviembre 2026</caption>" in html
        refused = overview(Lang("en"), {"indicators": [], "error": "no parameters for VI"})
        assert '<p class="error" role="alert">no parameters for VI</p>' in refused
        assert "No indicator for this window." in refused


class TestIndicatorWindow:
    def test_the_default_is_the_calendar_year_to_last_month(self) -> None:
        last = Period.of(date.today()).add_months(-1)
        default = ("PR", f"{last.year}-01", str(last))
        today = date.today()
        assert indicator_window("", "", "", today=today) == default
        assert indicator_window("XX", "2026-13", "nope", today=today) == default
        assert indicator_window("VI", "2025-03", "2025-05", today=today) == ("VI", "2025-03", "2025-05")
        backwards = indicator_window("VI", "2025-06", "2025-05", today=today)
        assert backwards == ("VI", *default[1:])  # backwards: the default


class TestOverview:
    def test_one_bar_per_month_and_jurisdiction_and_the_same_figures_in_the_table(self) -> None:
        html = overview(Lang("en"))
        assert len(re.findall(r"<rect [^>]*><title>", html)) == 24
        assert "<title>PR 2026-12: $12,345.67</title>" in html  # each bar's exact amount
        assert ">$12,346.00</text>" in html  # the axis' top tick, rounded to the dollar
        assert html.count("$12,345.67") == 4  # the bar, assessed and collected in the table, funds
        assert "Convention Bureau" in html
        assert "§31(B)" in html

    def test_spanish(self) -> None:
        html = overview(Lang("es"))
        assert "Recaudación por mes" in html
        assert "diciembre 2026" in html
        fund = "Fondos generales de la Compañía de Turismo para el Negociado de Convenciones"
        assert f'<th scope="row" title="fund:pr_convention_bureau">{fund}</th>' in html


class TestTemplates:
    def test_every_template_compiles_and_stays_small(self) -> None:
        env = templates()
        for path in TEMPLATES.rglob("*.html"):
            assert path.stat().st_size < 20_000, path  # a page is markup, not data
            env.get_template(str(path.relative_to(TEMPLATES)))
