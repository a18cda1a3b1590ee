"""Exemption certificate use-cases: issuing one of the kinds the lodging's jurisdiction issues."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from registry.certificates import repository
from registry.certificates.schemas import CertificateCreate
from registry.models import ExemptionCertificate, Lodging
from servicekit.errors import Conflict, ValidationFailed
from servicekit.outbox import emit
from taxcore.errors import TaxcoreError
from taxcore.events import registry as ev
from taxcore.jurisdictions import certificate_kinds
from taxcore.parameters import ParameterTree


async def issue(
    session: AsyncSession, *, lodging: Lodging, body: CertificateCreate, law: ParameterTree
) -> ExemptionCertificate:
    try:
        kinds = certificate_kinds(lodging.jurisdiction, body.valid_from, parameters=law)
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
    if await repository.number_taken(session, body.certificate_number):
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
        ev.CertificateIssued(
            certificate_id=cert.id,
            lodging_id=lodging.id,
            tax_account=lodging.tax_account,
            **data,
        ),
        key=lodging.tax_account,
    )
    return cert
