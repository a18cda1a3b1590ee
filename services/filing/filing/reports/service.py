"""Report use-cases: what a lodging-period's filers covered and what was paid for it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from filing.declarations import repository
from filing.lodging_periods import lodging_ref
from filing.models import Lodging
from filing.payments import repository as payments
from servicekit.auth import Principal
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date


async def lodging_period(
    session: AsyncSession, *, principal: Principal, lodging: Lodging, period: Period, law: ParameterTree
) -> dict[str, Any]:
    """Each filer's latest version and the totals, with what was paid for the period."""
    latest = await repository.latest_for_lodging_period(
        session, principal, lodging_id=lodging.lodging_id, period=str(period)
    )
    zero = Decimal("0.00")
    paid = await payments.paid_for_period(
        session, principal, lodging_id=lodging.lodging_id, period=str(period)
    )
    return {
        "lodging": lodging_ref(lodging, period),
        "period": str(period),
        "due_date": due_date(lodging.jurisdiction, period, parameters=law),
        "filers": [
            {
                "filer": {"kind": d.filer_kind, "id": d.filer_id},
                "declaration_id": d.id,
                "version": d.version,
                "filed_on": d.filed_on,
                "late": d.late,
                "flagged": d.flagged,
                "room_nights": int(d.input.get("room_nights", 0)),
                "taxable_base": d.taxable_base,
                "tax": d.tax,
                "impact_fee": d.impact_fee,
                "total_due": d.total_due,
                "declared_tax": d.declared_tax,
                "declared_total": d.declared_total,
            }
            for d in latest
        ],
        "totals": {
            "room_nights": sum(int(d.input.get("room_nights", 0)) for d in latest),
            "taxable_base": sum((d.taxable_base for d in latest), zero),
            "tax": sum((d.tax for d in latest), zero),
            "impact_fee": sum((d.impact_fee for d in latest), zero),
            "total_due": sum((d.total_due for d in latest), zero),
            "declared_tax": sum((d.declared_tax or zero for d in latest), zero),
        },
        "paid_for_period": sum((amount for _, amount in paid), zero),
        "paid_by": [{"payer": {"kind": k[0], "id": k[1]}, "amount": amount} for k, amount in paid],
    }
