"""Resolvers that raise the 404 themselves."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from filing.models import Lodging
from filing.projection import repository as projection
from filing.settings import FilingSettings
from servicekit.resolvers import visible_lodging

get_visible_lodging = visible_lodging(projection.get_visible, description="tax account number or lodging id")

VisibleLodgingDep = Annotated[Lodging, Depends(get_visible_lodging)]


def get_settings(request: Request) -> FilingSettings:
    settings: FilingSettings = request.app.state.settings
    return settings


SettingsDep = Annotated[FilingSettings, Depends(get_settings)]
