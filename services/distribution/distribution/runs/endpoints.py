from __future__ import annotations

import csv
import io
from typing import Annotated

from fastapi import Depends, Path, Query
from fastapi.responses import JSONResponse, Response

from distribution.models import Run
from distribution.runs import repository, service
from distribution.runs.schemas import RunCreate, RunOut
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, AgencyReadDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.runtime import RuntimeDep
from taxcore.jurisdictions import JurisdictionCode
from taxcore.periods import Period
from taxcore.rules.distribution import pending_section

router = make_router(prefix="/v1/runs", tags=["runs"])
ERRORS = {**Forbidden.openapi(), **Conflict.openapi(), **ValidationFailed.openapi()}


def to_out(run: Run, *, preview: bool = False, entry_id: int | None = None) -> RunOut:
    return RunOut.model_validate(
        {
            "id": None if preview else run.id,
            "status": "preview" if preview else "posted",
            "jurisdiction": run.jurisdiction,
            "month": run.month,
            "fiscal_year": run.fiscal_year,
            "closed_through": run.closed_through,
            "collected": run.collected,
            "collected_in_month": run.collected_in_month,
            "released": run.released,
            "pending": run.pending,
            "allocations": run.allocations,
            "inputs": run.inputs,
            "journal_entry_id": entry_id,
            "posted_at": None if preview else run.posted_at,
            "state": run.state,
            "trace": run.trace,
        }
    )


@router.post(
    "",
    response_model=RunOut,
    status_code=201,
    responses={200: {"description": "the month was already run (or a preview)", "model": RunOut}, **ERRORS},
    summary="Run (or preview) a month's distribution; running a posted month again returns it",
)
async def create_run(body: RunCreate, session: SessionDep, _: AdminDep, runtime: RuntimeDep) -> JSONResponse:
    outcome = await service.run_month(
        session,
        jurisdiction=body.jurisdiction,
        month=body.month,
        preview=body.preview,
        law=runtime.law,
        now=runtime.now(),
    )
    preview = outcome.status == "preview"
    entry_id = None if preview else await repository.journal_entry_id(session, outcome.run.id)
    out = to_out(outcome.run, preview=preview, entry_id=entry_id)
    status = 201 if outcome.status == "posted" else 200
    return JSONResponse(out.model_dump(mode="json"), status_code=status)


@router.get("", responses=Forbidden.openapi(), summary="Posted runs")
async def list_runs(
    session: SessionDep,
    _: AgencyReadDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    jurisdiction: Annotated[JurisdictionCode | None, Query(description="e.g. PR or VI")] = None,
    fiscal_year: Annotated[int | None, Query(ge=2004, le=9999)] = None,
) -> Page[RunOut]:
    after = decode_cursor(cursor, arity=2)
    rows = await repository.list_page(
        session,
        jurisdiction=jurisdiction,
        fiscal_year=fiscal_year,
        after=(after[0], after[1]) if after else None,
        limit=limit,
    )
    return paginate(rows, limit=limit, key=lambda r: [r.jurisdiction, r.month], to_item=to_out)


async def get_run(session: SessionDep, _: AgencyReadDep, run_id: Annotated[str, Path()]) -> Run:
    run = await session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r}")
    return run


RunDep = Annotated[Run, Depends(get_run)]


@router.get(
    "/{run_id}",
    responses={**NotFound.openapi(), **Forbidden.openapi()},
    summary="A run's report: every allocation with its rule and citation",
)
async def read_run(run: RunDep, session: SessionDep) -> RunOut:
    return to_out(run, entry_id=await repository.journal_entry_id(session, run.id))


@router.get(
    "/{run_id}/report.csv",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}}, **NotFound.openapi(), **Forbidden.openapi()},
    summary="A run's report as CSV",
)
async def read_run_csv(run: RunDep, runtime: RuntimeDep) -> Response:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["run_id", "jurisdiction", "month", "account", "fund", "name", "rule", "section", "amount"]
    )
    for a in run.allocations:
        writer.writerow(
            [
                run.id,
                run.jurisdiction,
                run.month,
                a["account"],
                a["fund"],
                a["name"],
                a["rule"],
                a["section"],
                a["amount"],
            ]
        )
    writer.writerow(
        [
            run.id,
            run.jurisdiction,
            run.month,
            f"pending:{run.jurisdiction}",
            "pending",
            "Held pending (no certification)",
            "pending",
            pending_section(run.jurisdiction, Period.parse(run.month).first_day, runtime.law),
            str(run.pending),
        ]
    )
    writer.writerow(
        [
            run.id,
            run.jurisdiction,
            run.month,
            "",
            "total",
            "Collected (distributed by the run)",
            "collected",
            "",
            str(run.collected),
        ]
    )
    return Response(
        buffer.getvalue(),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="run-{run.jurisdiction}-{run.month}.csv"'},
    )
