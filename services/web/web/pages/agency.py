"""The agency console: overview from the dashboard endpoints, lodging search, and a
lodging's statement as of any date with the explain trace, each step citing its section."""

from __future__ import annotations

import asyncio
import re
from datetime import date
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from servicekit.runtime import runtime_of
from taxcore.periods import Period
from web import people
from web.backend import ApiError
from web.chart import bar_chart
from web.core import AgencyDep, ApiDep, lang_of, render
from web.pages.plans import of_account

router = APIRouter(prefix="/agency")
JURISDICTIONS = ("PR", "VI")
SEARCH_PAGES = 10


PERIOD = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def indicator_window(jurisdiction: str, first: str, last: str, *, today: date) -> tuple[str, str, str]:
    """The indicators' jurisdiction and months as asked, else the calendar year to last month."""
    last_month = Period.of(today).add_months(-1)
    default_first = str(Period(last_month.year, 1))
    chosen = (
        jurisdiction if jurisdiction in JURISDICTIONS else JURISDICTIONS[0],
        first if PERIOD.match(first) else default_first,
        last if PERIOD.match(last) else str(last_month),
    )
    return chosen if chosen[1] <= chosen[2] else (chosen[0], default_first, str(last_month))


async def _indicators(api: ApiDep, jurisdiction: str, first: str, last: str) -> dict[str, Any]:
    """``GET /v1/indicators`` for the window; a refusal (a window without parameters) is shown."""
    try:
        found: dict[str, Any] = await api.get(
            "assessment", "/v1/indicators", params={"jurisdiction": jurisdiction, "from": first, "to": last}
        )
    except ApiError as exc:
        if exc.status != 422:
            raise
        return {"indicators": [], "error": exc.detail}
    return found


@router.get("")
async def overview(
    request: Request,
    person: AgencyDep,
    api: ApiDep,
    jurisdiction: str = "",
    first: str = Query("", alias="from"),
    last: str = Query("", alias="to"),
) -> Response:
    lang = lang_of(request)
    today = runtime_of(request).today()
    window = indicator_window(jurisdiction, first, last, today=today)
    this = Period.of(today)
    start = this.add_months(-11)
    months = [str(start.add_months(i)) for i in range(12)]
    # the page's six API calls are independent: made at once, the page waits for the slowest
    monthly_rows, aging, delinquents, funds, indicators = await asyncio.gather(
        asyncio.gather(
            *(
                api.get(
                    "assessment",
                    "/v1/dashboard/monthly",
                    params={"from": months[0], "to": months[-1], "jurisdiction": j},
                )
                for j in JURISDICTIONS
            )
        ),
        api.get("assessment", "/v1/dashboard/aging"),
        api.get("assessment", "/v1/dashboard/delinquents", params={"limit": 10}),
        asyncio.gather(
            *(api.get("distribution", "/v1/funds", params={"jurisdiction": j}) for j in JURISDICTIONS)
        ),
        _indicators(api, *window),
    )
    monthly = {j: {r["month"]: r for r in rows} for j, rows in zip(JURISDICTIONS, monthly_rows, strict=True)}
    collected = {
        j: [Decimal(monthly[j].get(m, {}).get("collected", "0")) for m in months] for j in JURISDICTIONS
    }
    assessed = {
        j: [Decimal(monthly[j].get(m, {}).get("assessed", "0")) for m in months] for j in JURISDICTIONS
    }
    chart = bar_chart(
        months,
        collected,
        category_label={m: lang.date(m + "-01", "MMM yy") for m in months},
        value_label=lang.money,
        tick_label=lambda v: lang.money(v.quantize(Decimal(1))),
    )
    return render(
        request,
        "agency/overview.html",
        months=months,
        collected=collected,
        assessed=assessed,
        chart=chart,
        aging=aging,
        delinquents=delinquents["items"],
        funds=list(funds),
        jurisdictions=JURISDICTIONS,
        indicators=indicators,
        window=dict(zip(("jurisdiction", "from", "to"), window, strict=True)),
    )


async def _search(
    api: ApiDep, *, q: str, jurisdiction: str | None, lodging_class: str | None
) -> list[dict[str, Any]]:
    """The registry searches name, tax account and municipality (``q``); up to
    ``SEARCH_PAGES`` pages of 200 are shown."""
    params: dict[str, str | int] = {"limit": 200}
    if jurisdiction in JURISDICTIONS:
        params["jurisdiction"] = str(jurisdiction)
    if lodging_class:
        params["lodging_class"] = lodging_class
    if q.strip():
        params["q"] = q.strip()[:200]
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(SEARCH_PAGES):
        page = await api.get(
            "registry", "/v1/lodgings", params={**params, **({"cursor": cursor} if cursor else {})}
        )
        found.extend(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return found


@router.get("/lodgings")
async def lodgings(
    request: Request,
    person: AgencyDep,
    api: ApiDep,
    q: str = "",
    jurisdiction: str = "",
    lodging_class: str = "",
) -> Response:
    results = await _search(api, q=q, jurisdiction=jurisdiction or None, lodging_class=lodging_class or None)
    template = "agency/_results.html" if request.headers.get("hx-request") else "agency/lodgings.html"
    return render(
        request,
        template,
        results=results,
        q=q,
        jurisdiction=jurisdiction,
        lodging_class=lodging_class,
        jurisdictions=JURISDICTIONS,
    )


def steps(trace: Any) -> list[dict[str, Any]]:
    """A trace as its list of steps, whichever shape the service sent."""
    if isinstance(trace, dict):
        inner = trace.get("steps", trace.get("trace"))
        return steps(inner) if inner is not None else []
    if isinstance(trace, list):
        return [s for s in trace if isinstance(s, dict)]
    return []


@router.get("/lodgings/{lodging_id}")
async def lodging(
    request: Request, lodging_id: str, person: AgencyDep, api: ApiDep, as_of: str = ""
) -> Response:
    found = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    try:
        on = date.fromisoformat(as_of) if as_of else runtime_of(request).today()
    except ValueError:
        on = runtime_of(request).today()
    account = found["tax_account"]
    statement, cases, refunds, abatements, timeline, (plans, plan_requests) = await asyncio.gather(
        api.get(
            "assessment",
            f"/v1/accounts/{account}/statement",
            params={"as_of": on.isoformat(), "explain": "true"},
        ),
        api.get("assessment", "/v1/cases", params={"tax_account": account}),
        api.get("assessment", f"/v1/accounts/{account}/refunds"),
        api.get("assessment", f"/v1/accounts/{account}/abatements"),
        api.get("assessment", f"/v1/accounts/{account}/timeline"),
        of_account(api, account),
    )
    explained = []
    for p in statement["periods"]:
        explain = p.get("explain") or {}
        explained.append(
            {
                "balance": steps(explain.get("balance")),
                "liabilities": [steps(x.get("trace")) for x in explain.get("liabilities", [])],
                "estimate": steps(explain.get("estimate")),
            }
        )
    await people.resolve(request, api, timeline["entries"], cases, refunds, abatements)
    return render(
        request,
        "agency/lodging.html",
        lodging=found,
        statement=statement,
        explained=explained,
        as_of=on.isoformat(),
        cases=cases,
        refunds=refunds,
        abatements=abatements,
        timeline=timeline["entries"],
        plans=plans,
        plan_requests=plan_requests,
    )
