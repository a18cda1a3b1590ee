"""Exemption certificates (PR §24(F) film production), with validity dates.

Which kinds a jurisdiction's agency issues is data: taxcore's exemptions whose
evidence is a certificate (``taxcore.jurisdictions.certificate_kinds``).
"""

from __future__ import annotations

from registry.certificates import repository, service
from registry.certificates.schemas import CertificateCreate, CertificateOut
from registry.deps import AdminLodgingDep, LodgingDep
from registry.models import ExemptionCertificate
from servicekit.app import router as make_router
from servicekit.db import SessionDep
from servicekit.errors import Conflict, NotFound, ValidationFailed
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/lodgings/{lodging_id}/certificates", tags=["exemption certificates"])


def to_out(c: ExemptionCertificate) -> CertificateOut:
    return CertificateOut.model_validate(c, from_attributes=True)


@router.post(
    "",
    status_code=201,
    responses={**ValidationFailed.openapi(), **Conflict.openapi(), **NotFound.openapi()},
)
async def issue(
    body: CertificateCreate, lodging: AdminLodgingDep, session: SessionDep, runtime: RuntimeDep
) -> CertificateOut:
    return to_out(await service.issue(session, lodging=lodging, body=body, law=runtime.law))


@router.get("", responses=NotFound.openapi())
async def list_certificates(lodging: LodgingDep, session: SessionDep) -> list[CertificateOut]:
    return [to_out(c) for c in await repository.of_lodging(session, lodging.id)]
