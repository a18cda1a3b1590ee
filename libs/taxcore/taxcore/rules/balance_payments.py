"""Rule 5, application of payments: money received pays the account's components in order.

The order is the jurisdiction's ``payments.application_order`` parameter (each value cites
its section and says why the order was read so); see :meth:`_PaymentsMixin._apply_payments`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from taxcore.rules.balance_adjustments import _WriteOff
from taxcore.rules.balance_parts import _PRINCIPAL, _RULE, ADJUSTMENT_COMPONENTS, Application, _Bucket
from taxcore.trace import NullTrace, Trace

__all__: list[str] = []


@dataclass
class _Money:
    payment_id: str
    remaining: Decimal


class _PaymentsMixin:
    order: list[str]
    buckets: dict[str, list[_Bucket]]
    pool: list[_Money]
    penalty_bears: list[str]
    frozen_penalty: Decimal
    rate_now: Decimal
    applications: list[Application]
    trace: Trace | NullTrace
    cleared_on: date | None
    tax: _Bucket
    fee: _Bucket
    writeoffs_active: list[_WriteOff]

    def _apply_payments(self, day: date) -> None:
        """Money in the pool pays what is outstanding in ``payments.application_order``
        (VI §54(b)(3)(B), §54(i); PR §2(16), §28(C): provisional readings of the order), each
        component in full before the next, then the fees that only adjustment facts create.

        Each part applied is an :class:`Application` citing the section of what it paid; a
        part of the principal paid fixes its §54(i)/§46 penalty at the tier reached today
        (the tranche rule). Money left when everything is paid stays in the pool: a credit
        for later charges of the same account. The day the principal is first cleared is
        the end of its lateness (``days_late``).
        """
        for component in (*self.order, *ADJUSTMENT_COMPONENTS):
            for bucket in self.buckets.get(component, []):
                while self.pool and bucket.outstanding > 0:
                    head = self.pool[0]
                    take = min(head.remaining, bucket.outstanding)
                    bucket.paid += take
                    head.remaining -= take
                    if head.remaining == 0:
                        self.pool.pop(0)
                    if component in _PRINCIPAL and component in self.penalty_bears:
                        self.frozen_penalty += take * self.rate_now
                    self.applications.append(
                        Application(
                            payment_id=head.payment_id,
                            component=component,
                            amount=take,
                            section=bucket.section,
                        )
                    )
                    self.trace.add(
                        f"{_RULE}.apply",
                        bucket.section,
                        f"{day.isoformat()}: {take} of payment {head.payment_id} to {bucket.key}",
                        take,
                        inputs={"payment_id": head.payment_id, "on": day, "component": component},
                    )
        if (
            self.cleared_on is None
            and not self.writeoffs_active
            and self.tax.exact + self.fee.exact > 0
            and self.tax.outstanding + self.fee.outstanding == 0
        ):
            self.cleared_on = day
