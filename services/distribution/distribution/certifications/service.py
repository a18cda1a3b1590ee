"""Bank certifications (PR §31(A)): one per jurisdiction and fiscal year; a correction is a
new version of it. Which jurisdictions take one is taxcore data
(``distribution.certification_required``).

A correction changes the debt-service schedule of the months run after it
(taxcore recomputes the cumulative installments with the new amount); months
already run are never rewritten.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from distribution.certifications import repository
from distribution.certifications.schemas import CertificationCreate
from distribution.models import Certification
from servicekit.errors import Conflict, NotFound, ValidationFailed
from taxcore.jurisdictions import known_jurisdictions
from taxcore.parameters import ParameterTree
from taxcore.rules.distribution import takes_certification


def certified_jurisdiction(data: CertificationCreate, *, law: ParameterTree) -> str:
    """The jurisdiction certified: the one named, or the only one that takes a certification."""
    takers = [
        j for j in known_jurisdictions(parameters=law) if takes_certification(j, data.certified_on, law)
    ]
    if data.jurisdiction is None:
        if len(takers) != 1:
            raise ValidationFailed.on(
                "jurisdiction", f"say which jurisdiction: one of {', '.join(takers) or 'none'}"
            )
        return takers[0]
    if data.jurisdiction not in takers:
        raise ValidationFailed.on(
            "jurisdiction",
            f"the {data.jurisdiction} distribution takes no Bank certification "
            f"(those that do: {', '.join(takers) or 'none'})",
        )
    return data.jurisdiction


async def certify(session: AsyncSession, *, data: CertificationCreate, law: ParameterTree) -> Certification:
    jurisdiction = certified_jurisdiction(data, law=law)
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('distribution-certification:' || :j), :fy)"),
        {"j": jurisdiction, "fy": data.fiscal_year},
    )
    latest = await repository.current(session, jurisdiction, data.fiscal_year)
    if latest is None and data.supersedes is not None:
        raise Conflict(
            f"fiscal year {data.fiscal_year} has no certification to correct",
            errors=[{"pointer": "#/body/supersedes", "detail": "nothing to supersede"}],
        )
    if latest is not None and data.supersedes != latest.id:
        raise Conflict(
            f"fiscal year {data.fiscal_year} is already certified ({latest.document_reference}, "
            f"version {latest.version}, id {latest.id}); a correction must name it in 'supersedes'",
            errors=[{"pointer": "#/body/supersedes", "detail": f"must be {latest.id}"}],
        )
    cert = Certification(
        jurisdiction=jurisdiction,
        fiscal_year=data.fiscal_year,
        version=1 if latest is None else latest.version + 1,
        amount=data.amount,
        certified_on=data.certified_on,
        document_reference=data.document_reference,
        first_year_months_remaining=data.first_year_months_remaining,
        supersedes_id=data.supersedes,
        reason=data.reason,
    )
    session.add(cert)
    await session.flush()
    return cert


async def one(session: AsyncSession, *, certification_id: str) -> tuple[Certification, bool]:
    """The certification and whether it is current (no correction supersedes it)."""
    found = await repository.get(session, certification_id)
    if found is None:
        raise NotFound(f"no certification {certification_id!r}")
    return found
