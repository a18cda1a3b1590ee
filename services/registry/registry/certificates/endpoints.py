"""PR §24(F) film production exemption certificates, with validity dates."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select

from registry.deps import AdminLodgingDep, LodgingDep
from registry.models import ExemptionCertificate
from servicekit.app import router as make_router
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.outbox import emit
from taxcore.events import registry as ev

router = make_router(prefix="/v1/lodgings/{lodging_id}/certificates", tags=["exemption certificates"])


class CertificateCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["pr_film_production"] = "pr_film_production"
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
    if lodging.jurisdiction != "PR":
        raise ValidationFailed.on("kind", "film production certificates exist only in PR (§24(F))")
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
    cert = ExemptionCertificate(lodging_id=lodging.id, **body.model_dump())
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
            **body.model_dump(),
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
