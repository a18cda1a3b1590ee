"""The agency's view of the outbox rows the relay parked (mounted by every service's app).

``GET /v1/outbox/dead-letters`` lists them (agency roles) with the error and how
many later events of the same key wait behind each; an agency-admin releases
(retry) or discards one, with a note, and the row keeps who did it and when.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.auth import AdminDep, AgencyReadDep
from servicekit.db import SessionDep, TransactionalRoute
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.outbox import discard_dead_letter, release_dead_letter
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate

DeadLetterStatus = Literal["open", "released", "discarded"]


class DeadLetterOut(BaseModel):
    id: int
    outbox_id: int
    event_id: str
    topic: str
    key: str
    event_type: str
    reason: str = Field(description="too-large, invalid-topic or serialization")
    error: str
    payload_bytes: int
    relay: str
    parked_at: datetime
    held: int = Field(description="later events of the same key waiting behind this row")
    status: DeadLetterStatus
    resolved_at: datetime | None
    resolved_by: str | None
    resolution_note: str | None


class Resolution(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str = Field(min_length=1, max_length=2000, description="why (kept with the row for audit)")


router = APIRouter(prefix="/v1/outbox/dead-letters", tags=["operations"], route_class=TransactionalRoute)

_SELECT = (
    "SELECT d.id, d.outbox_id, d.event_id, d.topic, d.key, d.event_type, d.reason, d.error, "
    "d.payload_bytes, d.relay, d.parked_at, COALESCE(d.resolution, 'open') AS status, d.resolved_at, "
    "d.resolved_by, d.resolution_note, CASE WHEN d.resolution IS NULL THEN (SELECT count(*) FROM outbox AS o "
    "WHERE o.key = d.key AND o.id > d.outbox_id AND o.published_at IS NULL) ELSE 0 END AS held "
    "FROM outbox_dead_letters AS d"
)
DeadLetterId = Annotated[int, Path(ge=1, le=2**63 - 1)]


def _out(row: object) -> DeadLetterOut:
    return DeadLetterOut.model_validate(row, from_attributes=True)


async def _one(session: AsyncSession, dead_letter_id: int) -> DeadLetterOut:
    row = (await session.execute(text(f"{_SELECT} WHERE d.id = :i"), {"i": dead_letter_id})).first()
    if row is None:
        raise NotFound(f"no outbox dead letter {dead_letter_id}")
    return _out(row)


@router.get("", summary="Outbox rows the relay parked")
async def list_dead_letters(
    session: SessionDep,
    _: AgencyReadDep,
    status: Annotated[DeadLetterStatus | Literal["all"], Query()] = "open",
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
) -> Page[DeadLetterOut]:
    after = decode_cursor(cursor, arity=1)
    clauses = ["d.id > :after"]
    if status != "all":
        clauses.append("COALESCE(d.resolution, 'open') = :status")
    try:
        start = int(after[0]) if after else 0
    except ValueError as exc:
        raise ValidationFailed.on("cursor", "not a cursor returned by this list", root="query") from exc
    rows = (
        await session.execute(
            text(f"{_SELECT} WHERE {' AND '.join(clauses)} ORDER BY d.id LIMIT :l"),
            {"after": start, "l": limit + 1} | ({"status": status} if status != "all" else {}),
        )
    ).all()
    return paginate(rows, limit=limit, key=lambda r: [r.id], to_item=_out)


@router.get("/{dead_letter_id}", summary="One parked outbox row")
async def get_dead_letter(
    dead_letter_id: DeadLetterId, session: SessionDep, _: AgencyReadDep
) -> DeadLetterOut:
    return await _one(session, dead_letter_id)


_Resolve = Callable[..., Awaitable[bool]]


async def _resolve(
    session: AsyncSession, resolve: _Resolve, dead_letter_id: int, *, actor: str, note: str
) -> DeadLetterOut:
    """Release or discard (``resolve``) an open dead letter: a 404 when there is none with that
    id, a 409 when it was already resolved."""
    await _one(session, dead_letter_id)
    if not await resolve(session, dead_letter_id=dead_letter_id, actor=actor, note=note):
        current = await _one(session, dead_letter_id)
        raise Conflict(f"outbox dead letter {dead_letter_id} was already {current.status}")
    return await _one(session, dead_letter_id)


@router.post(
    "/{dead_letter_id}/release",
    summary="Retry a parked row (agency-admin)",
    responses={**NotFound.openapi(), **Conflict.openapi()},
)
async def release(
    dead_letter_id: DeadLetterId, body: Resolution, session: SessionDep, principal: AdminDep
) -> DeadLetterOut:
    return await _resolve(session, release_dead_letter, dead_letter_id, actor=principal.actor, note=body.note)


@router.post(
    "/{dead_letter_id}/discard",
    summary="Never publish a parked row (agency-admin)",
    responses={**NotFound.openapi(), **Conflict.openapi()},
)
async def discard(
    dead_letter_id: DeadLetterId, body: Resolution, session: SessionDep, principal: AdminDep
) -> DeadLetterOut:
    return await _resolve(session, discard_dead_letter, dead_letter_id, actor=principal.actor, note=body.note)
