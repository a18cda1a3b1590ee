from __future__ import annotations

from registry.bonds import repository, service
from registry.bonds.schemas import BondCreate, BondOut, BondStatusChange, DrawCreate, DrawOut
from registry.deps import AdminLodgingDep, LodgingDep
from registry.models import Bond, BondDraw, Lodging
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.rows import from_row

router = make_router(prefix="/v1/lodgings/{lodging_id}/bonds", tags=["bonds"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Conflict.openapi()}


def draw_out(d: BondDraw) -> DrawOut:
    return from_row(DrawOut, d)


def to_out(b: Bond) -> BondOut:
    drawn = service.drawn(b)
    return from_row(BondOut, b, drawn=drawn, remaining=b.amount - drawn, draws=[draw_out(d) for d in b.draws])


async def _bond(session: SessionDep, lodging: Lodging, bond_id: str) -> Bond:
    bond = await repository.bond(session, bond_id)
    if bond is None or bond.lodging_id != lodging.id:
        raise NotFound(f"no bond {bond_id!r} for this lodging")
    return bond


@router.post(
    "",
    status_code=201,
    responses=ERRORS,
    summary="Post a bond (PR §27: cash deposit, letter of credit or surety)",
)
async def post_bond(body: BondCreate, lodging: AdminLodgingDep, session: SessionDep) -> BondOut:
    return to_out(await service.post_bond(session, lodging=lodging, data=body))


@router.get("", responses=NotFound.openapi())
async def list_bonds(lodging: LodgingDep, session: SessionDep, principal: PrincipalDep) -> list[BondOut]:
    if principal.role == "facilitator":
        # The bond and its draws are the operator's (a draw is an unpaid deficiency, which
        # the assessment service keeps from facilitators too): another's data, a 404.
        raise NotFound(f"no bonds for lodging {lodging.tax_account!r}")
    return [to_out(b) for b in await repository.of_lodging(session, lodging.id)]


@router.post("/{bond_id}/status", responses=ERRORS, summary="Release or cancel an active bond")
async def change_status(
    bond_id: str, body: BondStatusChange, lodging: AdminLodgingDep, session: SessionDep
) -> BondOut:
    bond = await _bond(session, lodging, bond_id)
    return to_out(await service.change_status(session, lodging=lodging, bond=bond, status=body.status))


@router.post(
    "/{bond_id}/draws",
    status_code=201,
    responses=ERRORS,
    summary="Record a draw on the bond (PR §33)",
)
async def record_draw(
    bond_id: str, body: DrawCreate, lodging: AdminLodgingDep, session: SessionDep
) -> DrawOut:
    bond = await _bond(session, lodging, bond_id)
    return draw_out(
        await service.record_draw(
            session,
            lodging=lodging,
            bond=bond,
            amount=body.amount,
            drawn_on=body.drawn_on,
            reason=body.reason,
        )
    )
