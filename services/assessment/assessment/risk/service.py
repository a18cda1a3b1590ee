"""Risk scores of every lodging of a jurisdiction, ranked (TADAT P2, P6-13; PR §3(E), §10; VI §54(d)).

Each lodging's factors come from the service's own records over the look-back window
(``risk.lookback_months``): cross-check findings (ADR anomalies apart), the intermediary gap,
periods filed late, arrears past due, and the months since its last audit closed. taxcore
weighs them (``risk.weights``) and explains each term.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.audits import repository as audits
from assessment.risk import repository
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date
from taxcore.rules.risk import RiskInputs, RiskScore, risk_score


@dataclass(frozen=True, slots=True)
class Ranked:
    risk: repository.LodgingRisk
    score: RiskScore
    window: list[str]
    late: list[str]


def window(jurisdiction: str, as_of: date, *, law: ParameterTree) -> list[str]:
    months = int(str(law.value(jurisdiction, "risk.lookback_months", as_of)))
    last = Period.of(as_of).prev()
    return [str(last.add_months(-i)) for i in range(months - 1, -1, -1)]


async def ranked(
    session: AsyncSession, *, jurisdiction: str, as_of: date, law: ParameterTree
) -> list[Ranked]:
    periods = window(jurisdiction, as_of, law=law)
    closed = await audits.last_closed(session)
    tree = law
    out: list[Ranked] = []
    for risk in await repository.gather(session, jurisdiction=jurisdiction, periods=periods, as_of=as_of):
        late = sorted(
            p
            for p, filed in risk.first_filed.items()
            if filed > due_date(jurisdiction, Period.parse(p), parameters=tree)
        )
        last = closed.get(risk.lodging.tax_account)
        since = None if last is None else Period.of(last.recorded_on).months_until(Period.of(as_of))
        inputs = RiskInputs(
            jurisdiction=jurisdiction,
            findings=risk.findings,
            late_periods=len(late),
            crosscheck_gap=risk.gap,
            adr_anomalies=risk.adr,
            arrears=risk.arrears,
            months_since_audit=since,
        )
        out.append(Ranked(risk, risk_score(inputs, on=as_of, parameters=tree), periods, late))
    out.sort(key=lambda r: (-r.score.score, r.risk.lodging.tax_account))
    return out
