"""Resolvers that raise the 404 themselves."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from filing.models import Lodging
from filing.projection import repository as projection
from filing.settings import FilingSettings
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound


async def get_visible_lodging(
    session: SessionDep,
    principal: PrincipalDep,
    lodging_id: Annotated[str, Path(description="tax account number or lodging id")],
) -> Lodging:
    lodging = await projection.get_visible(session, principal, lodging_id)
    if lodging is None:
        raise NotFound(f"no lodging {lodging_id!r}")
    return lodging


VisibleLodgingDep = Annotated[Lodging, Depends(get_visible_lodging)]


def get_settings(request: Request) -> FilingSettings:
    settings: FilingSettings = request.app.state.settings
    return settings


SettingsDep = Annotated[FilingSettings, Depends(get_settings)]
