from __future__ import annotations

from typing import Annotated

from fastapi import Query

from distribution.certifications import repository, service
from distribution.certifications.schemas import CertificationCreate, CertificationOut
from distribution.models import Certification
from servicekit.app import router as make_router
from servicekit.auth import AdminDep, AgencyReadDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.rows import from_row
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/certifications", tags=["certifications"])
ERRORS = {**Forbidden.openapi(), **Conflict.openapi(), **ValidationFailed.openapi()}


def to_out(cert: Certification, current: bool) -> CertificationOut:
    return from_row(CertificationOut, cert, supersedes=cert.supersedes_id, current=current)


@router.post(
    "",
    status_code=201,
    responses=ERRORS,
    summary="Record the Bank's certification of a fiscal year (PR §31(A))",
)
async def create_certification(
    body: CertificationCreate, session: SessionDep, _: AdminDep, runtime: RuntimeDep
) -> CertificationOut:
    cert = await service.certify(session, data=body, law=runtime.law)
    await session.refresh(cert)
    return to_out(cert, True)


@router.get(
    "",
    responses=Forbidden.openapi(),
    summary="Certifications and their corrections, by fiscal year and version",
)
async def list_certifications(
    session: SessionDep,
    _: AgencyReadDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    fiscal_year: Annotated[int | None, Query(ge=2004, le=9999)] = None,
) -> Page[CertificationOut]:
    after = decode_cursor(cursor, arity=2)
    rows = await repository.list_page(
        session, fiscal_year=fiscal_year, after=(int(after[0]), int(after[1])) if after else None, limit=limit
    )
    return paginate(
        rows, limit=limit, key=lambda r: [r[0].fiscal_year, r[0].version], to_item=lambda r: to_out(*r)
    )


@router.get(
    "/{certification_id}",
    responses={**NotFound.openapi(), **Forbidden.openapi()},
    summary="One certification",
)
async def get_certification(certification_id: str, session: SessionDep, _: AgencyReadDep) -> CertificationOut:
    return to_out(*await service.one(session, certification_id=certification_id))
