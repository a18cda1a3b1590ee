"""Exemption certificates (PR §24(F) film production), with validity dates.

Which kinds a jurisdiction's agency issues is data: taxcore's exemptions whose
evidence is a certificate (``taxcore.jurisdictions.certificate_kinds``).
"""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select

from registry.deps import AdminLodgingDep, LodgingDep
from registry.models import ExemptionCertificate
from servicekit.app import router as make_router
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.outbox import emit
from taxcore.errors import TaxcoreError
from taxcore.events import registry as ev
from taxcore.jurisdictions import certificate_kinds

router = make_router(prefix="/v1/lodgings/{lodging_id}/certificates", tags=["exemption certificates"])


class CertificateCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str | None = Field(
        default=None,
        max_length=100,
        description="an exemption of the lodging's jurisdiction evidenced by a certificate, e.g. "
        "pr_film_production (PR §24(F)); default: its only such exemption",
    )
    certificate_number: str = Field(min_length=1, max_length=60)
    production: str = Field(min_length=1, max_length=200)
    valid_from: date
    valid_to: date

    @model_validator(mode="after")
    def _dates(self) -> CertificateCreate:
        if self.valid_to < self.valid_from:
            raise ValueError("valid_to is before valid_from")
        return self


class CertificateOut(BaseModel):
    id: str
    lodging_id: str
    kind: str
    certificate_number: str
    production: str
    valid_from: date
    valid_to: date
    created_at: datetime


def to_out(c: ExemptionCertificate) -> CertificateOut:
    return CertificateOut(
        id=c.id,
        lodging_id=c.lodging_id,
        kind=c.kind,
        certificate_number=c.certificate_number,
        production=c.production,
        valid_from=c.valid_from,
        valid_to=c.valid_to,
        created_at=c.created_at,
    )


@router.post(
    "",
    status_code=201,
    response_model=CertificateOut,
    responses={**ValidationFailed.openapi(), **Conflict.openapi(), **NotFound.openapi()},
)
async def issue(body: CertificateCreate, lodging: AdminLodgingDep, session: SessionDep) -> CertificateOut:
    try:
        kinds = certificate_kinds(lodging.jurisdiction, body.valid_from)
    except TaxcoreError as exc:
        raise ValidationFailed.on("valid_from", exc.message) from exc
    issued = ", ".join(sorted(kinds)) or "none"
    kind = body.kind
    if kind is None and len(kinds) > 1:
        raise ValidationFailed.on("kind", f"say which certificate: one of {issued}")
    if kind is None and len(kinds) == 1:
        (kind,) = kinds
    if kind is None or kind not in kinds:
        raise ValidationFailed.on(
            "kind",
            f"{lodging.jurisdiction} issues no {kind or 'exemption'} certificate (it issues: {issued})",
        )
    data = {**body.model_dump(), "kind": kind}
    exists = (
        await session.execute(
            select(ExemptionCertificate.id).where(
                ExemptionCertificate.certificate_number == body.certificate_number
            )
        )
    ).first()
    if exists:
        raise Conflict(
            f"certificate {body.certificate_number!r} is already registered",
            errors=[{"pointer": "#/body/certificate_number", "detail": "duplicate"}],
        )
    cert = ExemptionCertificate(lodging_id=lodging.id, **data)
    session.add(cert)
    await session.flush()
    await session.refresh(cert)
    await emit(
        session,
        event_type="roomtax.registry.certificate.issued.v1",
        key=lodging.tax_account,
        data=ev.CertificateIssued(
            certificate_id=cert.id,
            lodging_id=lodging.id,
            tax_account=lodging.tax_account,
            **data,
        ),
    )
    return to_out(cert)


@router.get("", response_model=list[CertificateOut], responses=NotFound.openapi())
async def list_certificates(lodging: LodgingDep, session: SessionDep) -> list[CertificateOut]:
    stmt = (
        select(ExemptionCertificate)
        .where(ExemptionCertificate.lodging_id == lodging.id)
        .order_by(ExemptionCertificate.valid_from)
    )
    return [to_out(c) for c in (await session.execute(stmt)).scalars()]
