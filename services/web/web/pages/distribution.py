"""Distribution for the agency: posted runs and their reports (CSV), certifications, and a
month's run previewed, then posted by an administrator after a confirmation.

The distribution service computes everything (taxcore's fund shares and floors) and
refuses a posting by any other role; the page shows the preview the service computed,
with each allocation's rule and section, and asks to confirm before posting.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from servicekit.runtime import runtime_of
from taxcore.periods import Period
from web.backend import ApiError
from web.core import AgencyDep, Api, ApiDep, CsrfDep, lang_of, redirect, render
from web.pages import funds
from web.session import Person

router = APIRouter(prefix="/agency/distribution")
JURISDICTIONS = {"PR": "PR", "VI": "VI"}


async def _page(
    request: Request,
    person: Person,
    api: Api,
    *,
    preview: dict[str, Any] | None = None,
    form: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    runs, certifications = await asyncio.gather(
        api.get("distribution", "/v1/runs", params={"limit": 100}),
        api.get("distribution", "/v1/certifications", params={"limit": 100}),
    )
    return render(
        request,
        "agency/distribution.html",
        status,
        runs=sorted(runs["items"], key=lambda r: (r["month"], r["jurisdiction"]), reverse=True),
        certifications=certifications["items"],
        jurisdictions=JURISDICTIONS,
        preview=preview,
        may_post=person.role == "agency-admin",
        form=form or {"jurisdiction": "PR", "month": str(Period.of(runtime_of(request).today()).prev())},
        errors=errors or {},
    )


@router.get("")
async def distribution(request: Request, person: AgencyDep, api: ApiDep) -> Response:
    return await _page(request, person, api)


@router.post("/runs", dependencies=[CsrfDep])
async def run(
    request: Request,
    person: AgencyDep,
    api: ApiDep,
    jurisdiction: Annotated[str, Form()] = "",
    month: Annotated[str, Form()] = "",
    action: Annotated[str, Form()] = "preview",
    confirm: Annotated[str, Form()] = "",
) -> Response:
    """Preview a month (any agency role may look), or post it (an administrator who confirmed)."""
    _ = lang_of(request).gettext
    form = {"jurisdiction": jurisdiction, "month": month}
    if action == "post" and confirm != "yes":
        errors = {"confirm": _("Tick the box to confirm the posting; a posted run is final.")}
        preview = await _preview(api, jurisdiction, month)
        return await _page(request, person, api, preview=preview, form=form, errors=errors, status=422)
    body = {"jurisdiction": jurisdiction, "month": month, "preview": action != "post"}
    try:
        out = await api.post("distribution", "/v1/runs", body)
    except ApiError as exc:
        if exc.status not in (403, 409, 422):
            raise
        errors = {**exc.field_errors(), "_form": exc.detail}
        return await _page(request, person, api, form=form, errors=errors, status=exc.status)
    if action == "post":
        return redirect(f"/agency/distribution/runs/{out['id']}", request)
    return await _page(request, person, api, preview=out, form=form)


async def _preview(api: Api, jurisdiction: str, month: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = await api.post(
            "distribution", "/v1/runs", {"jurisdiction": jurisdiction, "month": month, "preview": True}
        )
    except ApiError:
        return None
    return found


@router.get("/runs/{run_id}")
async def run_page(request: Request, run_id: str, person: AgencyDep, api: ApiDep) -> Response:
    found = await api.get("distribution", f"/v1/runs/{run_id}")
    return render(request, "agency/run.html", run=found)


@router.get("/runs/{run_id}/report.csv")
async def run_csv(request: Request, run_id: str, person: AgencyDep, api: ApiDep) -> Response:
    path = f"/v1/runs/{run_id}/report.csv"
    return await api.download("distribution", path, media_type="text/csv", filename=f"run-{run_id}.csv")


router.include_router(funds.router)
