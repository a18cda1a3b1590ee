from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Path, Query
from fastapi.responses import Response

from filing.declarations.schemas import FilerKind, PeriodStr
from filing.deps import SettingsDep
from filing.models import Payment, PaymentReversal
from filing.payments import receipts, repository, service
from filing.payments.schemas import (
    Method,
    PaymentCreate,
    PaymentOut,
    ReceiptOut,
    ReversalCreate,
    ReversalOut,
    VerificationOut,
)
from filing.projection import repository as projection
from servicekit import documents
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_int_cursor, paginate
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1", tags=["payments"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Forbidden.openapi(), **Conflict.openapi()}
PaymentWithReversal = tuple[Payment, PaymentReversal | None]


async def get_payment(
    session: SessionDep, principal: PrincipalDep, payment_id: Annotated[str, Path()]
) -> PaymentWithReversal:
    found = await repository.get_visible(session, principal, payment_id)
    if found is None:
        raise NotFound(f"no payment {payment_id!r}")
    return found


PaymentDep = Annotated[PaymentWithReversal, Depends(get_payment)]


@router.post(
    "/payments",
    status_code=201,
    responses=ERRORS,
    summary="Record a payment (PR §29 methods); send Idempotency-Key so a retry is recorded once",
)
async def record_payment(
    body: PaymentCreate,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    runtime: RuntimeDep,
) -> PaymentOut:
    if not (principal.can_write_all or principal.role in ("operator", "facilitator")):
        raise Forbidden(f"role {principal.role!r} may not record payments")
    lodging = await projection.get_visible(session, principal, body.tax_account)
    if lodging is None:
        raise NotFound(f"no lodging {body.tax_account!r}")
    payment = await service.record_payment(
        session, principal=principal, lodging=lodging, body=body, settings=settings, today=runtime.today()
    )
    return PaymentOut.model_validate(service.payment_out(payment, None))


@router.get("/payments", summary="Payments, newest first")
async def list_payments(
    session: SessionDep,
    principal: PrincipalDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    jurisdiction: str | None = None,
    period: Annotated[PeriodStr | None, Query(description="designated for this period")] = None,
    lodging: Annotated[str | None, Query(description="tax account number or lodging id")] = None,
    payer_kind: FilerKind | None = None,
    payer_id: str | None = None,
    method: Method | None = None,
    status: Literal["received", "reversed"] | None = None,
) -> Page[PaymentOut]:
    rows = await repository.list_page(
        session,
        principal,
        limit=limit,
        before=decode_int_cursor(cursor),
        jurisdiction=jurisdiction,
        period=period,
        lodging=lodging,
        payer_kind=payer_kind,
        payer_id=payer_id,
        method=method,
        status=status,
    )
    return paginate(
        rows,
        limit=limit,
        key=lambda r: [r[0].seq],
        to_item=lambda r: PaymentOut.model_validate(service.payment_out(r[0], r[1])),
    )


@router.get("/payments/{payment_id}", responses=NotFound.openapi())
async def read_payment(found: PaymentDep) -> PaymentOut:
    return PaymentOut.model_validate(service.payment_out(*found))


@router.get(
    "/payments/{payment_id}/receipt",
    response_model=ReceiptOut,
    responses={
        **NotFound.openapi(),
        200: {"content": {"application/pdf": {}}, "description": "JSON, or a printable PDF with ?format=pdf"},
    },
    summary="Receipt of a payment (PR §28(C)); ?format=pdf for a printable one",
)
async def payment_receipt(
    found: PaymentDep,
    session: SessionDep,
    settings: SettingsDep,
    runtime: RuntimeDep,
    format: Literal["json", "pdf"] = "json",  # noqa: A002 - the query parameter's public name
    lang: Annotated[
        Literal["en", "es"] | None,
        Query(description="the PDF's language; default the jurisdiction's (PR Spanish, VI English)"),
    ] = None,
) -> ReceiptOut | Response:
    payment, reversal = found
    lodging = await projection.get(session, payment.lodging_id)
    payer_name = await projection.party_name(session, payment.payer_kind, payment.payer_id)
    receipt = ReceiptOut.model_validate(
        service.receipt(
            payment,
            reversal,
            lodging_name=lodging.name if lodging else "",
            payer_name=payer_name,
            settings=settings,
            issued_at=runtime.now(),
            law=runtime.law,
        )
    )
    if format == "pdf":
        return Response(
            receipts.render_pdf(
                receipt,
                language=documents.language_for(
                    payment.jurisdiction, lang, payment.received_on, tree=runtime.law
                ),
                municipality=lodging.municipality if lodging else None,
                law=runtime.law,
            ),
            media_type="application/pdf",
            headers={"Content-Disposition": f'inline; filename="receipt-{payment.id}.pdf"'},
        )
    return receipt


@router.get(
    "/receipts/verify/{code}",
    responses=NotFound.openapi(),
    summary="Check a printed receipt's verification code (no token needed: the code is the proof)",
)
async def verify_receipt(
    code: str, session: SessionDep, settings: SettingsDep, runtime: RuntimeDep
) -> VerificationOut:
    normalized = receipts.normalize_code(code)
    found = await repository.by_code(session, normalized)
    if found is None or not receipts.matches(settings.receipt_secret, found[0].id, normalized):
        raise NotFound("no receipt with this verification code")
    payment, reversal = found
    return VerificationOut(
        valid=reversal is None,
        receipt_number=payment.id,
        agency=settings.agency_name(payment.jurisdiction, payment.received_on, law=runtime.law),
        jurisdiction=payment.jurisdiction,
        tax_account=payment.tax_account,
        amount=payment.amount,
        method=payment.method,
        received_on=payment.received_on,
        status="reversed" if reversal else "received",
    )


@router.post(
    "/payments/{payment_id}/reversals",
    status_code=201,
    responses=ERRORS,
    summary="Reverse a payment (bounced check): a new record referencing it, once",
)
async def reverse_payment(
    body: ReversalCreate, found: PaymentDep, session: SessionDep, principal: AdminDep, runtime: RuntimeDep
) -> ReversalOut:
    reversal = await service.reverse_payment(
        session, principal=principal, payment=found[0], body=body, today=runtime.today()
    )
    return ReversalOut.model_validate(service.reversal_out(reversal))
