"""Registry events case work needs: which facilitators a lodging authorized (case visibility)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.casework.models import FacilitatorAuthorization
from servicekit.consumer import handles
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent
from taxcore.events.registry import AuthorizationEnded, AuthorizationGranted


@handles(AuthorizationGranted, AuthorizationEnded)
async def on_authorization(
    session: AsyncSession, data: AuthorizationGranted, event: CloudEvent, runtime: Runtime
) -> None:
    """Granted: the facilitator sees the lodging's cases; ended: no more (idempotent upsert)."""
    ended = isinstance(data, AuthorizationEnded)
    row = await session.get(FacilitatorAuthorization, data.authorization_id, with_for_update=True)
    if row is None:
        row = FacilitatorAuthorization(
            authorization_id=data.authorization_id,
            tax_account=data.tax_account,
            facilitator_id=data.facilitator_id,
            starts_on=data.starts_on,
            ends_on=data.ends_on,
            ended=ended,
        )
        session.add(row)
    elif ended:  # an end is final: a late "granted" never reopens it
        row.ended = True
        row.ends_on = data.ends_on
    await session.flush()
