"""``/v1/emails`` (what was sent to the caller's party, and its delivery status) and
``/v1/payments/{id}/receipt-email`` (a receipt on request, PR §28(C))."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request

from notify.mail import repository, service
from notify.mail.schemas import EmailOut, ReceiptRequested
from notify.models import Email
from notify.settings import NotifySettings
from servicekit.app import router as make_router
from servicekit.auth import Principal, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, NotFound, Unauthorized
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate

router = make_router(tags=["e-mail"])
ERRORS = {**Unauthorized.openapi(), **Forbidden.openapi(), **NotFound.openapi()}


def recipient_of(principal: Principal) -> tuple[str, str] | None:
    if principal.is_agency:
        return None
    if principal.role == "operator" and principal.operator_id:
        return ("operator", principal.operator_id)
    if principal.role == "facilitator" and principal.facilitator_id:
        return ("facilitator", principal.facilitator_id)
    raise Forbidden("this token is bound to no party")


def to_out(row: Email) -> EmailOut:
    return EmailOut.model_validate(row, from_attributes=True)


@router.get(
    "/v1/emails",
    responses=ERRORS,
    summary="E-mails sent to the caller's party, newest first",
)
async def list_emails(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[EmailOut]:
    after = decode_cursor(cursor, arity=2)
    rows = await repository.listed(
        session, recipient_of(principal), limit=limit, after=(after[0], after[1]) if after else None
    )
    return paginate(rows, limit=limit, key=lambda r: (r.created_at.isoformat(), r.id), to_item=to_out)


@router.post(
    "/v1/payments/{payment_id}/receipt-email",
    status_code=202,
    responses=ERRORS,
    summary="E-mail the receipt of a payment (on request, PR §28(C)); once per payment and recipient",
)
async def receipt_email(
    payment_id: Annotated[str, Path(max_length=64)],
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
) -> ReceiptRequested:
    if principal.role in ("agency-auditor", "dashboard"):
        raise Forbidden(f"role {principal.role!r} may not request e-mails")
    settings: NotifySettings = request.app.state.settings
    key, queued = await service.request_receipt(
        session, principal=principal, payment_id=payment_id, settings=settings
    )
    return ReceiptRequested(message_key=key, queued=queued)
