from __future__ import annotations

from registry.authorizations import repository, service
from registry.authorizations.schemas import AuthorizationCreate, AuthorizationEnd, AuthorizationOut
from registry.deps import AdminLodgingDep, LodgingDep
from registry.models import Authorization, Lodging
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.rows import from_row

router = make_router(prefix="/v1/lodgings/{lodging_id}/authorizations", tags=["authorizations"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi()}


def to_out(a: Authorization, lodging: Lodging) -> AuthorizationOut:
    return from_row(AuthorizationOut, a, lodging_id=lodging.id, tax_account=lodging.tax_account)


@router.post(
    "",
    status_code=201,
    responses=ERRORS,
    summary="Authorize a facilitator to file and remit for this lodging",
)
async def grant(body: AuthorizationCreate, lodging: AdminLodgingDep, session: SessionDep) -> AuthorizationOut:
    auth = await service.grant(
        session,
        lodging=lodging,
        facilitator_id=body.facilitator_id,
        starts_on=body.starts_on,
        ends_on=body.ends_on,
    )
    return to_out(auth, lodging)


@router.get("", responses=NotFound.openapi())
async def list_authorizations(
    lodging: LodgingDep, session: SessionDep, principal: PrincipalDep
) -> list[AuthorizationOut]:
    only = (principal.facilitator_id or "") if principal.role == "facilitator" else None
    return [to_out(a, lodging) for a in await repository.of_lodging(session, lodging.id, facilitator_id=only)]


@router.post(
    "/{authorization_id}/end",
    responses=ERRORS,
    summary="End (or shorten) an authorization",
)
async def end(
    authorization_id: str, body: AuthorizationEnd, lodging: AdminLodgingDep, session: SessionDep
) -> AuthorizationOut:
    auth = await repository.authorization(session, authorization_id)
    if auth is None or auth.lodging_id != lodging.id:
        raise NotFound(f"no authorization {authorization_id!r} for this lodging")
    return to_out(await service.end(session, lodging=lodging, auth=auth, ends_on=body.ends_on), lodging)
