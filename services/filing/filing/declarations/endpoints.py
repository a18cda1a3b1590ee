from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, TypeVar

import asyncpg
from fastapi import Depends, Path, Query, Request, Response
from pydantic_core import to_json

from filing.declarations import repository, service
from filing.declarations.schemas import (
    DeclarationAmend,
    DeclarationCreate,
    DeclarationOut,
    FilerKind,
    PeriodStr,
    Status,
)
from filing.lodging_periods import parse_period
from filing.models import Declaration
from servicekit.app import router as make_router
from servicekit.auth import Principal, PrincipalDep, bearer_token
from servicekit.db import SessionDep, direct, pool_connection
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.outbox import service_of
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_int_cursor, paginate
from servicekit.runtime import Runtime, RuntimeDep
from taxcore.money import fmt

router = make_router(prefix="/v1", tags=["declarations"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Forbidden.openapi(), **Conflict.openapi()}
_Body = TypeVar("_Body", bound=DeclarationAmend)
ExplainQuery = Annotated[
    bool, Query(description="include the computation's trace (rule, parameters, section)")
]


def _out_data(v: Mapping[str, Any], *, latest: bool, explain: bool) -> dict[str, Any]:
    """``DeclarationOut``'s fields from a declaration's columns (a stored row, or a loaded
    ``Declaration``'s ``__dict__``), in its order, as typed values (not validated).

    Read from the instance's ``__dict__``, where the ORM keeps a loaded row's column values
    (and :func:`repository.loaded` puts them): not through ~45 instrumented attributes, each a
    Python call (issue 12: the 201 of the hot route). Every column of a declaration is loaded
    (none is deferred), and an async session could not lazy-load one anyway."""
    lodging = {
        "lodging_id": v["lodging_id"],
        "tax_account": v["tax_account"],
        "jurisdiction": v["jurisdiction"],
        "lodging_class": v["lodging_class"],
        "casino": v["casino"],
    }
    data: dict[str, Any] = {
        "id": v["id"],
        "filing_id": v["filing_id"],
        "version": v["version"],
        "supersedes": v["supersedes"],
        "latest": latest,
        "lodging": lodging,
        "period": v["period"],
        "filer": {"kind": v["filer_kind"], "id": v["filer_id"]},
        "schedule_id": v["schedule_id"],
        "schedule_row": v["schedule_row"],
        "filed_on": v["filed_on"],
        "due_date": v["due_date"],
        "late": v["late"],
        "flagged": v["flagged"],
        "status": "late" if v["late"] else "on_time",
        "submitted": v["submitted"],
        "input": v["input"],
        "computed": {
            "gross_receipts": v["gross_receipts"],
            "exempt_total": v["exempt_total"],
            "taxable_base": v["taxable_base"],
            "rate": v["rate"].normalize(),
            "tax": v["tax"],
            "impact_fee": v["impact_fee"],
            "total_due": v["total_due"],
        },
        "declared": {
            "taxable_base": v["declared_taxable_base"],
            "tax": v["declared_tax"],
            "impact_fee": v["declared_impact_fee"],
            "total": v["declared_total"],
            "line_total": v["declared_line_total"],
        },
        "tax_difference": None if v["declared_tax"] is None else v["declared_tax"] - v["tax"],
        "findings": v["findings"],
        "trace": v["trace"] if explain else None,
        "submitted_by": v["submitted_by"],
        "created_at": v["created_at"],
    }
    return data


def to_out(d: Declaration, *, latest: bool, explain: bool = False) -> DeclarationOut:
    return DeclarationOut.model_validate(_out_data(d.__dict__, latest=latest, explain=explain))


async def get_declaration(
    session: SessionDep,
    principal: PrincipalDep,
    declaration_id: Annotated[str, Path(description="declaration (version) id")],
) -> tuple[Declaration, bool]:
    found = await repository.get_visible(session, principal, declaration_id)
    if found is None:
        raise NotFound(f"no declaration {declaration_id!r}")
    return found


DeclarationDep = Annotated[tuple[Declaration, bool], Depends(get_declaration)]


async def _file(
    conn: asyncpg.Connection, *, writer: str, principal: Principal, runtime: Runtime, body: DeclarationCreate
) -> service.Stored:
    if not (principal.can_write_all or principal.role in ("operator", "facilitator")):
        raise Forbidden(f"role {principal.role!r} may not file declarations")
    return await service.file_declaration(
        conn,
        service=writer,
        principal=principal,
        lodging=body.lodging,
        body=body,
        period=parse_period(body.period),
        filer=body.filer,
        today=runtime.today(),
        parameters=runtime.law,
    )


def _money(value: Decimal | None) -> str | None:
    return None if value is None else fmt(value)


def created_json(row: Mapping[str, Any], event: Mapping[str, Any]) -> bytes:
    """The body of a new version's 201: the bytes ``DeclarationOut`` of :func:`to_out` (latest,
    no trace) serializes to, written from the stored row's own typed values without validating
    them again: the amounts as ``Money`` writes them (``test_response_bytes`` pins the bytes;
    ``test_created_json`` compares both). ``event``: the version's event payload
    (``service.event_data`` of the row), whose amounts and findings are already written so
    (``fmt``, ``service.finding_json``): taken from it, not formatted a second time."""
    data = _out_data(row, latest=True, explain=False)
    data["lodging"]["name"] = None
    computed = data["computed"]
    data["computed"] = {
        "gross_receipts": fmt(computed["gross_receipts"]),
        "exempt_total": fmt(computed["exempt_total"]),
        "taxable_base": event["taxable_base"],
        "rate": computed["rate"],
        "tax": event["tax"],
        "impact_fee": event["impact_fee"],
        "total_due": event["total_due"],
        "currency": "USD",
    }
    declared = data["declared"]
    data["declared"] = {
        "taxable_base": _money(declared["taxable_base"]),
        "tax": event["declared_tax"],
        "impact_fee": _money(declared["impact_fee"]),
        "total": event["declared_total"],
        "line_total": _money(declared["line_total"]),
    }
    data["tax_difference"] = _money(data["tax_difference"])
    data["findings"] = event["findings"]
    return to_json(data)


def _created(stored: service.Stored) -> Response:
    """The 201 of a new version, serialized once (the bytes FastAPI's response model gives)."""
    return Response(
        created_json(stored.row, stored.event_data), status_code=201, media_type="application/json"
    )


async def _direct_body(request: Request, model: type[_Body]) -> tuple[str, _Body] | None:
    """The bearer token and the body of a request a direct handler may serve (see
    :func:`file_declaration_direct`), or None to leave it to the route."""
    token = bearer_token(request)
    if request.scope["query_string"] or token is None:
        return None
    if request.headers.get("content-type") != "application/json":
        return None
    raw = await request.body()  # a body over the limit is its 413 here, as in the route
    try:
        return token, model.model_validate(json.loads(raw))
    except Exception:  # noqa: BLE001 - the route parses it again and answers its problem
        return None


def _writer(request: Request) -> str:
    """The service whose events a direct handler writes (as ``outbox.service_of`` a session)."""
    return str(request.app.state.sessionmaker.kw.get("info", {}).get("service", "unknown"))


async def file_declaration_direct(request: Request) -> Response | None:
    """``POST /v1/declarations`` as :func:`file_declaration` answers it, without FastAPI's
    dependency solving and a session (issue 12: the API's hot route): the body parsed and
    validated as FastAPI does it (``json.loads``, the model), the token verified as
    ``get_principal`` does, the two statements on a pool connection (the read, then the one
    write, each its own transaction as with the session). Anything else — a query string,
    another content type or authorization scheme, a body that does not validate — is left to
    the route, which answers it (and its 422 or 401) as before."""
    parsed = await _direct_body(request, DeclarationCreate)
    if parsed is None:
        return None
    token, body = parsed
    principal = await request.app.state.token_verifier.verify_fresh(token)
    writer = _writer(request)
    async with pool_connection(request) as conn:
        stored = await _file(
            conn, writer=writer, principal=principal, runtime=request.app.state.runtime, body=body
        )
    return _created(stored)


@router.post(
    "/declarations",
    status_code=201,
    response_model=DeclarationOut,
    responses=ERRORS,
    summary="File a monthly declaration (a second one for the same lodging, period and filer amends it)",
    operation_id="declarations.file",
    description=(
        "Files one lodging's declaration for one period: gross room receipts and exclusions in, "
        "the tax computed by the jurisdiction's rules out (each amount with its rule and statute "
        "section; `?explain=true` adds the trace). A second filing for the same lodging, period "
        "and filer is an amendment. An operator files for its own lodgings, a facilitator for "
        "those that authorized it; another's lodging is a 404. Send `Idempotency-Key` so a retry "
        "files once."
    ),
)
@direct(file_declaration_direct)
async def file_declaration(
    body: DeclarationCreate,
    session: SessionDep,
    principal: PrincipalDep,
    runtime: RuntimeDep,
    explain: ExplainQuery = False,
) -> DeclarationOut:
    conn = await repository.driver(session, begin=False)  # the key's transaction, if any
    stored = await _file(conn, writer=service_of(session), principal=principal, runtime=runtime, body=body)
    return to_out(service.declaration_of(stored), latest=True, explain=explain)


async def amend_declaration_direct(request: Request) -> Response | None:
    """``POST /v1/declarations/{id}/amendments`` as :func:`amend_declaration` answers it,
    the way :func:`file_declaration_direct` files: the declaration looked up (visible to the
    caller, else the same 404) in one more read on the pool connection."""
    parsed = await _direct_body(request, DeclarationAmend)
    if parsed is None:
        return None
    token, body = parsed
    principal = await request.app.state.token_verifier.verify_fresh(token)
    declaration_id = request.path_params["declaration_id"]
    runtime: Runtime = request.app.state.runtime
    async with pool_connection(request) as conn:
        original = await repository.amended_visible(conn, principal, declaration_id)
        if original is None:
            raise NotFound(f"no declaration {declaration_id!r}")
        stored = await service.amend(
            conn,
            service=_writer(request),
            principal=principal,
            original=original,
            body=body,
            today=runtime.today(),
            parameters=runtime.law,
        )
    return _created(stored)


@router.post(
    "/declarations/{declaration_id}/amendments",
    status_code=201,
    response_model=DeclarationOut,
    responses=ERRORS,
    summary="Amend a declaration: a new version supersedes it (the original is kept)",
)
@direct(amend_declaration_direct)
async def amend_declaration(
    body: DeclarationAmend,
    found: DeclarationDep,
    session: SessionDep,
    principal: PrincipalDep,
    runtime: RuntimeDep,
    explain: ExplainQuery = False,
) -> DeclarationOut:
    stored = await service.amend(
        await repository.driver(session, begin=False),  # joins the read's transaction
        service=service_of(session),
        principal=principal,
        original=found[0],
        body=body,
        today=runtime.today(),
        parameters=runtime.law,
    )
    return to_out(service.declaration_of(stored), latest=True, explain=explain)


@router.get("/declarations/{declaration_id}", response_model=DeclarationOut, responses=NotFound.openapi())
async def read_declaration(found: DeclarationDep, explain: ExplainQuery = False) -> DeclarationOut:
    return to_out(found[0], latest=found[1], explain=explain)


@router.get(
    "/declarations/{declaration_id}/history",
    response_model=list[DeclarationOut],
    responses=NotFound.openapi(),
    summary="Every version of this declaration's filing, oldest first",
)
async def declaration_history(found: DeclarationDep, session: SessionDep) -> list[DeclarationOut]:
    versions = await repository.history(session, found[0].filing_id)
    return [to_out(d, latest=i == len(versions) - 1) for i, d in enumerate(versions)]


@router.get("/declarations", response_model=Page[DeclarationOut], summary="Declarations, newest first")
async def list_declarations(
    session: SessionDep,
    principal: PrincipalDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    jurisdiction: str | None = None,
    period: Annotated[PeriodStr | None, Query()] = None,
    lodging: Annotated[str | None, Query(description="tax account number or lodging id")] = None,
    filer_kind: FilerKind | None = None,
    filer_id: str | None = None,
    status: Status | None = None,
    schedule_id: str | None = None,
    latest: Annotated[bool, Query(description="only the latest version of each filing")] = False,
) -> Page[DeclarationOut]:
    before = decode_int_cursor(cursor)
    rows = await repository.list_page(
        session,
        principal,
        limit=limit,
        before=before,
        jurisdiction=jurisdiction,
        period=period,
        lodging=lodging,
        filer_kind=filer_kind,
        filer_id=filer_id,
        status=status,
        schedule_id=schedule_id,
        latest_only=latest,
    )
    return paginate(rows, limit=limit, key=lambda r: [r[0].seq], to_item=lambda r: to_out(r[0], latest=r[1]))
