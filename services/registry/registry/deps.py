"""Resolvers that raise the 404 themselves."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from registry.lodgings import repository
from registry.models import Lodging
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, NotFound


async def get_lodging(
    session: SessionDep,
    principal: PrincipalDep,
    lodging_id: Annotated[str, Path(description="lodging id or tax account number")],
) -> Lodging:
    lodging = await repository.get_visible(session, principal, lodging_id)
    if lodging is None:
        raise NotFound(f"no lodging {lodging_id!r}")
    return lodging


LodgingDep = Annotated[Lodging, Depends(get_lodging)]


async def get_lodging_for_admin(lodging: LodgingDep, principal: PrincipalDep) -> Lodging:
    if not principal.can_write_all:
        raise Forbidden("only the agency administrator changes the register")
    return lodging


AdminLodgingDep = Annotated[Lodging, Depends(get_lodging_for_admin)]
