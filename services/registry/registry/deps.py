"""Resolvers that raise the 404 themselves."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from registry.lodgings import repository
from registry.models import Lodging
from servicekit.auth import PrincipalDep
from servicekit.errors import Forbidden
from servicekit.resolvers import visible_lodging

get_lodging = visible_lodging(repository.get_visible, description="lodging id or tax account number")

LodgingDep = Annotated[Lodging, Depends(get_lodging)]


async def get_lodging_for_admin(lodging: LodgingDep, principal: PrincipalDep) -> Lodging:
    if not principal.can_write_all:
        raise Forbidden("only the agency administrator changes the register")
    return lodging


AdminLodgingDep = Annotated[Lodging, Depends(get_lodging_for_admin)]
