from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Query

from registry.deps import AdminLodgingDep, LodgingDep
from registry.lodgings import repository, service
from registry.lodgings.schemas import (
    AttributeChange,
    Compliance,
    LodgingCreate,
    LodgingOut,
    LodgingUpdate,
    StatusChange,
)
from registry.models import Lodging
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.runtime import RuntimeDep
from taxcore.jurisdictions import JurisdictionCode

router = make_router(prefix="/v1/lodgings", tags=["lodgings"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi()}


def to_out(lodging: Lodging, today: date) -> LodgingOut:
    return LodgingOut.model_validate(
        {
            **service.snapshot(lodging),
            "id": lodging.id,
            "address": lodging.address,
            "status": service.current_status(lodging, today),
            "statuses": [
                {"status": s.status, "effective_from": s.effective_from, "reason": s.reason}
                for s in lodging.statuses
            ],
            "attributes": [
                {
                    "effective_from": a.effective_from,
                    "lodging_class": a.lodging_class,
                    "casino": a.casino,
                    "reason": a.reason,
                }
                for a in lodging.attributes
            ],
            "created_at": lodging.created_at,
        }
    )


@router.post(
    "",
    status_code=201,
    responses=ERRORS,
    summary="Register a lodging and assign its tax account number (PR §26)",
)
async def register_lodging(
    body: LodgingCreate, session: SessionDep, _: AdminDep, runtime: RuntimeDep
) -> LodgingOut:
    return to_out(await service.register(session, data=body, law=runtime.law), runtime.today())


@router.get("", summary="Lodgings visible to the caller")
async def list_lodgings(
    session: SessionDep,
    principal: PrincipalDep,
    runtime: RuntimeDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    jurisdiction: Annotated[JurisdictionCode | None, Query(description="e.g. PR or VI")] = None,
    lodging_class: str | None = None,
    operator_id: str | None = None,
    q: Annotated[
        str | None,
        Query(min_length=1, max_length=200, description="part of the name, tax account or municipality"),
    ] = None,
    tax_account: Annotated[
        list[str] | None,
        Query(max_length=500, description="only these tax accounts (repeat the parameter; at most 500)"),
    ] = None,
) -> Page[LodgingOut]:
    rows = await repository.list_page(
        session,
        principal,
        limit=limit,
        after=decode_cursor(cursor, arity=1),
        jurisdiction=jurisdiction,
        lodging_class=lodging_class,
        operator_id=operator_id,
        q=q,
        tax_accounts=tax_account or (),
    )
    today = runtime.today()
    return paginate(rows, limit=limit, key=lambda r: [r.tax_account], to_item=lambda r: to_out(r, today))


@router.get(
    "/{lodging_id}",
    responses=ERRORS,
    summary="One lodging, by id or tax account number",
)
async def get_lodging(lodging: LodgingDep, runtime: RuntimeDep) -> LodgingOut:
    return to_out(lodging, runtime.today())


@router.patch("/{lodging_id}", responses=ERRORS)
async def update_lodging(
    body: LodgingUpdate, lodging: AdminLodgingDep, session: SessionDep, runtime: RuntimeDep
) -> LodgingOut:
    return to_out(await service.update(session, lodging=lodging, data=body), runtime.today())


@router.post(
    "/{lodging_id}/status",
    responses=ERRORS,
    summary="Change status (active, suspended, closed) from an effective date",
)
async def change_status(
    body: StatusChange, lodging: AdminLodgingDep, session: SessionDep, runtime: RuntimeDep
) -> LodgingOut:
    return to_out(await service.change_status(session, lodging=lodging, data=body), runtime.today())


@router.post(
    "/{lodging_id}/attributes",
    responses={**ERRORS, **Conflict.openapi()},
    summary="Record a class or casino-licence change from an effective date (PR §2(16), §24(B))",
)
async def change_attributes(
    body: AttributeChange,
    lodging: AdminLodgingDep,
    session: SessionDep,
    principal: PrincipalDep,
    runtime: RuntimeDep,
) -> LodgingOut:
    changed = await service.change_attributes(
        session, lodging=lodging, data=body, actor=principal.actor, law=runtime.law
    )
    return to_out(changed, runtime.today())


@router.get(
    "/{lodging_id}/compliance",
    responses=ERRORS,
    summary="Is the lodging compliant (valid bond per PR §27, active)?",
)
async def get_compliance(
    lodging: LodgingDep, session: SessionDep, runtime: RuntimeDep, as_of: date | None = None
) -> Compliance:
    found = await service.compliance(session, lodging=lodging, on=as_of or runtime.today(), law=runtime.law)
    return Compliance.model_validate(found)
