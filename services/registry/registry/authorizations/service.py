"""A lodging lets a facilitator file and remit for it, between two dates."""

from __future__ import annotations

from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from registry.authorizations import repository
from registry.models import Authorization, Facilitator, Lodging
from servicekit.errors import Conflict, ValidationFailed
from servicekit.outbox import emit
from taxcore.events import registry as ev


def event_data(auth: Authorization, lodging: Lodging) -> dict[str, object]:
    return {
        "authorization_id": auth.id,
        "lodging_id": lodging.id,
        "tax_account": lodging.tax_account,
        "facilitator_id": auth.facilitator_id,
        "starts_on": auth.starts_on,
        "ends_on": auth.ends_on,
    }


async def grant(
    session: AsyncSession, *, lodging: Lodging, facilitator_id: str, starts_on: date, ends_on: date | None
) -> Authorization:
    facilitator = await session.get(Facilitator, facilitator_id)
    if facilitator is None:
        raise ValidationFailed.on("facilitator_id", "no facilitator with this id")
    if facilitator.operator_id is not None and facilitator.operator_id == lodging.operator_id:
        raise ValidationFailed.on(
            "facilitator_id", "a facilitator cannot be authorized by its own operator's lodging"
        )
    if starts_on < lodging.registered_on:
        raise ValidationFailed.on("starts_on", "is before the lodging's registration date")
    clash = await repository.overlapping(session, lodging.id, facilitator_id, starts_on, ends_on)
    if clash is not None:
        raise Conflict(
            f"overlaps authorization {clash.id} ({clash.starts_on} to {clash.ends_on or 'open'})",
            errors=[{"pointer": "#/body/starts_on", "detail": "overlaps an existing authorization"}],
        )
    auth = Authorization(
        lodging_id=lodging.id, facilitator_id=facilitator_id, starts_on=starts_on, ends_on=ends_on
    )
    session.add(auth)
    await session.flush()
    await session.refresh(auth)
    await emit(
        session, ev.AuthorizationGranted.model_validate(event_data(auth, lodging)), key=lodging.tax_account
    )
    return auth


async def end(
    session: AsyncSession, *, lodging: Lodging, auth: Authorization, ends_on: date
) -> Authorization:
    if ends_on < auth.starts_on:
        raise ValidationFailed.on("ends_on", "is before the authorization's start")
    if auth.ends_on is not None and ends_on > auth.ends_on:
        raise ValidationFailed.on("ends_on", "an authorization can be shortened, not extended")
    auth.ends_on = ends_on
    await session.flush()
    await emit(
        session, ev.AuthorizationEnded.model_validate(event_data(auth, lodging)), key=lodging.tax_account
    )
    return auth
