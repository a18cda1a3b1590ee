"""Go-live opening states (taxcore ``OpeningState``): what each fund of a jurisdiction already
received this fiscal year before the platform's first run of it.

Without one, the first run starts from an empty fiscal year and "catches up" every earlier
month (the PR Bureau's floor for July-September in one September run). With one, taxcore's
``opening_state`` gives the first run the state after ``through_month``, and that first run
must be the month after it. Declared by an agency-admin, recorded with who and when;
append-only: a correction is a new version naming the one it supersedes, allowed only
until the first run (a posted run is never rewritten). Those transfers happened outside
the platform, so they are not journal entries: the ledger keeps only what the platform
collected and distributed; the reports show the opening amounts beside it.
"""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from distribution.models import OpeningState
from distribution.openings import repository
from distribution.openings.schemas import OpeningStateCreate
from distribution.runs import repository as runs
from servicekit.errors import Conflict, NotFound, ValidationFailed
from taxcore.errors import TaxcoreError
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, fiscal_year
from taxcore.rules.distribution import OpeningApplied
from taxcore.rules.distribution import OpeningState as TaxcoreOpening
from taxcore.rules.distribution import opening_state as taxcore_opening_state


def applied(opening: OpeningState, law: ParameterTree) -> OpeningApplied:
    """taxcore's reading of a stored opening state (the first run's starting state) under ``law``."""
    return taxcore_opening_state(
        TaxcoreOpening(
            jurisdiction=opening.jurisdiction,
            fiscal_year=opening.fiscal_year,
            through_month=opening.through_month,
            transferred={k: Decimal(v) for k, v in opening.transferred.items()},
        ),
        law,
    )


async def declare(
    session: AsyncSession, *, data: OpeningStateCreate, actor: str, law: ParameterTree
) -> OpeningState:
    j = data.jurisdiction
    await repository.lock(session, j)
    first = await runs.earliest(session, j)
    if first is not None:
        raise Conflict(
            f"the {j} distribution already ran ({first.month}): an opening state applies only "
            "before the first run, and posted runs are never rewritten",
            errors=[{"pointer": "#/body/jurisdiction", "detail": f"first run {first.month} is posted"}],
        )
    latest = await repository.current(session, j)
    if latest is None and data.supersedes is not None:
        raise Conflict(
            f"{j} has no opening state to correct",
            errors=[{"pointer": "#/body/supersedes", "detail": "nothing to supersede"}],
        )
    if latest is not None and data.supersedes != latest.id:
        raise Conflict(
            f"{j} already has an opening state (version {latest.version}, id {latest.id}); "
            "a correction must name it in 'supersedes'",
            errors=[{"pointer": "#/body/supersedes", "detail": f"must be {latest.id}"}],
        )
    try:
        fy = fiscal_year(j, Period.parse(data.through_month).first_day, parameters=law)
        # taxcore validates the funds and amounts (InvalidInput names the field -> 422)
        taxcore_opening_state(
            TaxcoreOpening(
                jurisdiction=j, fiscal_year=fy, through_month=data.through_month, transferred=data.transferred
            ),
            law,
        )
    except TaxcoreError as exc:
        if exc.field.startswith("transferred."):
            raise
        # a month the jurisdiction's parameters do not cover (before its first values)
        raise ValidationFailed.on("through_month", exc.message) from None
    opening = OpeningState(
        jurisdiction=j,
        version=1 if latest is None else latest.version + 1,
        fiscal_year=fy,
        through_month=data.through_month,
        transferred={k: f"{v:.2f}" for k, v in sorted(data.transferred.items())},
        document_reference=data.document_reference,
        supersedes_id=data.supersedes,
        reason=data.reason,
        entered_by=actor,
    )
    session.add(opening)
    await session.flush()
    return opening


async def one(session: AsyncSession, *, opening_state_id: str) -> tuple[OpeningState, bool]:
    """The opening state and whether it is current (no correction supersedes it)."""
    found = await repository.get(session, opening_state_id)
    if found is None:
        raise NotFound(f"no opening state {opening_state_id!r}")
    return found
