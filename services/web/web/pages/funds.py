"""Distribution for the agency: fund balances as of a day, and a fiscal year per fund
against its statutory floor. Each is a server-rendered chart with its table beside it,
every figure citing the section the distribution service gives for it.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from servicekit.runtime import runtime_of
from taxcore.periods import fiscal_year as fiscal_year_of
from web.chart import BarChart, bar_chart
from web.core import AgencyDep, ApiDep, lang_of, render
from web.i18n import Lang

#: included by ``web.pages.distribution`` under ``/agency/distribution``
router = APIRouter()
JURISDICTIONS = ("PR", "VI")
#: fiscal years the floors page offers, back from the current one
YEARS_BACK = 5


def _jurisdiction(raw: str) -> str:
    return raw if raw in JURISDICTIONS else JURISDICTIONS[0]


def _day(raw: str, today: date) -> date:
    try:
        return date.fromisoformat(raw) if raw else today
    except ValueError:
        return today


def numbered(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Under each bar its row's number in the table beside the chart (the names are long)."""
    return {r["label"]: str(i) for i, r in enumerate(rows, start=1)}


def chart_of(lang: Lang, rows: list[dict[str, Any]], series: dict[str, list[Decimal]]) -> BarChart:
    """Bars of ``rows`` (numbered as in the table), negative figures drawn as none."""
    return bar_chart(
        [r["label"] for r in rows],
        {name: [max(v, Decimal(0)) for v in values] for name, values in series.items()},
        category_label=numbered(rows),
        value_label=lang.money,
        tick_label=lambda v: lang.money(v.quantize(Decimal(1))),
    )


@router.get("/funds")
async def funds(
    request: Request, person: AgencyDep, api: ApiDep, jurisdiction: str = "", as_of: str = ""
) -> Response:
    lang = lang_of(request)
    _ = lang.gettext
    chosen, on = _jurisdiction(jurisdiction), _day(as_of, runtime_of(request).today())
    found = await api.get(
        "distribution", "/v1/funds", params={"jurisdiction": chosen, "as_of": on.isoformat()}
    )
    accounts = [{**a, "label": lang.account_name(a["account"], a["name"])} for a in found["accounts"]]
    chart = chart_of(lang, accounts, {_("Balance"): [Decimal(a["balance"]) for a in accounts]})
    return render(
        request,
        "agency/funds.html",
        balances=found,
        accounts=accounts,
        chart=chart,
        jurisdiction=chosen,
        jurisdictions=JURISDICTIONS,
        as_of=on.isoformat(),
    )


@router.get("/floors")
async def floors(
    request: Request, person: AgencyDep, api: ApiDep, jurisdiction: str = "", fiscal_year: str = ""
) -> Response:
    lang = lang_of(request)
    chosen = _jurisdiction(jurisdiction)
    runtime = runtime_of(request)
    current = fiscal_year_of(chosen, runtime.today(), parameters=runtime.law)
    years = [current - i for i in range(YEARS_BACK)]
    year = int(fiscal_year) if fiscal_year.isdigit() and int(fiscal_year) in years else current
    found = await api.get("distribution", f"/v1/fiscal-years/{year}/summary", params={"jurisdiction": chosen})
    rows = [{**f, "label": lang.account_name(f["account"], f["name"])} for f in found["funds"]]
    floored = [f for f in rows if f.get("floor")]
    _ = lang.gettext
    chart = chart_of(
        lang,
        floored,
        {
            _("Received"): [Decimal(f["received"]) for f in floored],
            _("Owed to date"): [Decimal(f["floor"]["owed_to_date"]) for f in floored],
            _("Annual floor"): [Decimal(f["floor"]["annual"]) for f in floored],
        },
    )
    return render(
        request,
        "agency/floors.html",
        summary=found,
        rows=rows,
        floored=floored,
        chart=chart,
        jurisdiction=chosen,
        jurisdictions=JURISDICTIONS,
        fiscal_year=year,
        years=years,
    )
