"""Templates render from API-shaped data: the overview's chart and its table agree."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from web.app import templates
from web.chart import bar_chart
from web.i18n import Lang

TEMPLATES = Path(__file__).resolve().parents[1] / "web" / "templates"
MONTHS = [f"2026-{m:02d}" for m in range(1, 13)]


def overview(lang: Lang) -> str:
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
                    "accounts": [{"name": "Convention Bureau", "section": "§31(B)", "balance": "900.00"}],
                    "collected": "12345.67",
                    "pending": "11445.67",
                }
            ],
            jurisdictions=("PR", "VI"),
        )
    )


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


class TestTemplates:
    def test_every_template_compiles_and_stays_small(self) -> None:
        env = templates()
        for path in TEMPLATES.rglob("*.html"):
            assert path.stat().st_size < 20_000, path  # a page is markup, not data
            env.get_template(str(path.relative_to(TEMPLATES)))
