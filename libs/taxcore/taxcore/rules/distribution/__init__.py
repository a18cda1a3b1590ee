"""Rule 6 — which public funds receive each month's collections.

Puerto Rico (Act 272-2003 §31). The Bank certifies, before each fiscal year
(July - June), the amount the Convention Center District Authority needs for
its debt service. Each month the Company first transfers to the Bank's special
account one tenth of it (from July; in the first fiscal year, 1 / the months
remaining), plus any earlier month's shortfall, out of the month's collections
(§31(A)). Of the excess (§31(B)), in order of priority: 2% of the total Tax
collected to the Company (i), 5% to the Treasury's General Fund (ii), 9% to
the Convention Center Bureau (iii), with a floor of $4,500,000 a year paid
$375,000 a month with catch-up; the rest goes to ``pr_remainder`` (our text
ends inside §31(B)(iii), provisional).

U.S. Virgin Islands (33 V.I.C. §54(e), (b)(3)(D)). The room tax goes to the
Tourism Advertising Revolving Fund after the annual floors (Agriculture
$1,000,000 by June 30, sports tourism $1,000,000, Education $500,000, Sports,
Parks and Recreation $500,000), paid in monthly installments with catch-up
(``distribution.floor_schedule``, provisional). The impact fee: 15% to the
Fund, split 25% each among the earmark funds of the four purposes of §54(e)(2)
(``distribution.tarf_impact_fee_purposes``, provisional), 85% to the General Fund.

Conservation: in every run ``sum(allocations) + pending == collected`` to the
cent, where ``collected`` is the money the run distributes — the month's
collections plus any funds released from ``pending`` of earlier months
(``released``; only PR months held for want of a Bank certification). Each
share is rounded half-up to the cent once; the last share of each source is
the remainder, never rounded. Cumulative targets (debt-service installments,
the Bureau's 9% and floor, the VI floors) are rounded on the cumulative
amount, so monthly rounding never drifts.

The state of a fiscal year (what each fund received so far, shortfalls to
make up) is passed from one month to the next; a state from an earlier fiscal
year is rolled over.

Go-live: a platform that starts in the middle of a fiscal year does not start
from an empty state (its first run would "catch up" every earlier month: the PR
Bureau's floor for July-September in one September run). The agency declares an
:class:`OpeningState` — what each fund already received this fiscal year through
a month, outside the platform — and :func:`opening_state` turns it into the state
the first run starts from (the collections of those months follow from the funds:
everything collected in a month the platform did not run was distributed).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ValidationError

from taxcore.errors import InvalidInput, ParameterError
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, fiscal_year
from taxcore.rules.distribution.machinery import JurisdictionDistribution, _amount, _tree, funds
from taxcore.rules.distribution.models import (
    DebtServiceStatus,
    DistributionResult,
    Floor,
    Fund,
    FundAllocation,
    OpeningApplied,
    OpeningState,
    PRCertification,
    PRState,
    VIState,
)
from taxcore.rules.distribution.pr import (
    PR_BANK,
    PR_BUREAU,
    PR_COMPANY,
    PR_REMAINDER,
    PR_TREASURY,
    _pr_debt_service,
    _pr_distribute,
    _pr_floors,
    _pr_opening,
    distribute_pr_month,
)
from taxcore.rules.distribution.vi import (
    VI_GENERAL_FUND,
    VI_TARF,
    _no_debt_service,
    _vi_distribute,
    _vi_floors,
    _vi_opening,
    distribute_vi_month,
)
from taxcore.trace import Trace

__all__ = [
    "PR_BANK",
    "PR_BUREAU",
    "PR_COMPANY",
    "PR_REMAINDER",
    "PR_TREASURY",
    "VI_GENERAL_FUND",
    "VI_TARF",
    "BankCertification",
    "DebtServiceStatus",
    "DistributionResult",
    "Floor",
    "Fund",
    "FundAllocation",
    "JurisdictionDistribution",
    "OpeningApplied",
    "OpeningState",
    "PRCertification",
    "PRState",
    "VIState",
    "debt_service_status",
    "distribute_month",
    "distribute_pr_month",
    "distribute_vi_month",
    "distribution_rule",
    "funds",
    "opening_state",
    "pending_section",
    "register_distribution_rule",
    "reported_floors",
    "takes_certification",
]

# Services call only the functions below. Each jurisdiction's statute is one entry of
# ``_RULES`` (a module of its own: ``pr``, ``vi``; a third one registers its own), and what
# the services need to know about it (does it take a Bank certification, which floors it
# reports) is data.

#: The certification a month's distribution may take (PR §31(A)); the generic name.
BankCertification = PRCertification


_RULES: dict[str, JurisdictionDistribution] = {
    "PR": JurisdictionDistribution(
        components=frozenset({"tax"}),
        state_model=PRState,
        distribute=_pr_distribute,
        floors=_pr_floors,
        debt_service=_pr_debt_service,
        opening=_pr_opening,
    ),
    "VI": JurisdictionDistribution(
        components=frozenset({"tax", "impact_fee"}),
        state_model=VIState,
        distribute=_vi_distribute,
        floors=_vi_floors,
        debt_service=_no_debt_service,
        opening=_vi_opening,
    ),
}


def register_distribution_rule(jurisdiction: str, rule: JurisdictionDistribution) -> None:
    """Add (or replace) the distribution rule of ``jurisdiction`` (a jurisdiction module calls it)."""
    _RULES[jurisdiction] = rule


def distribution_rule(jurisdiction: str) -> JurisdictionDistribution:
    """The distribution rule of ``jurisdiction``; ``InvalidInput(field="jurisdiction")`` if none."""
    try:
        return _RULES[jurisdiction]
    except KeyError:
        raise InvalidInput(
            "jurisdiction",
            f"no distribution rule for {jurisdiction!r}; rules exist for {', '.join(sorted(_RULES))}",
        ) from None


def _state(rule: JurisdictionDistribution, state: BaseModel | Mapping[str, Any]) -> Any:
    raw = state.model_dump() if isinstance(state, BaseModel) else state
    try:
        return rule.state_model.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput("state", f"not a state of this jurisdiction's distribution: {exc}") from None


def distribute_month(
    jurisdiction: str,
    *,
    month: str,
    amounts: Mapping[str, Decimal],
    certification: PRCertification | None,
    state: BaseModel | Mapping[str, Any] | None,
    parameters: ParameterTree | None = None,
) -> DistributionResult:
    """Distribute one month of ``jurisdiction``'s collections, whatever its statute.

    ``amounts`` are the month's principal collections by component (``tax``,
    ``impact_fee``); a non-zero component the jurisdiction does not distribute is
    ``InvalidInput("amounts.<component>")``. ``state`` is the previous run's state (the
    model or its JSON form). ``certification`` only where :func:`takes_certification`.
    """
    rule = distribution_rule(jurisdiction)
    for component, amount in amounts.items():
        if component not in rule.components and amount != 0:
            raise InvalidInput(f"amounts.{component}", f"{jurisdiction} distributes no {component!r}")
    st = None if state is None else _state(rule, state)
    return rule.distribute(month, amounts, certification, st, _tree(parameters))


def opening_state(opening: OpeningState, parameters: ParameterTree | None = None) -> OpeningApplied:
    """The state the first run of ``opening.jurisdiction`` starts from, after ``through_month``.

    ``InvalidInput`` names the field: ``through_month`` outside ``fiscal_year``,
    ``transferred.<code>`` for a code that is not one of the jurisdiction's funds in force
    or an amount that is negative or not whole cents; ``jurisdiction`` where the rule takes
    no opening state. Pass ``result.state`` as the first run's ``state``.
    """
    tree = _tree(parameters)
    rule = distribution_rule(opening.jurisdiction)
    if rule.opening is None:
        raise InvalidInput("jurisdiction", f"the {opening.jurisdiction} distribution takes no opening state")
    try:
        through = Period.parse(opening.through_month)
    except InvalidInput as exc:
        raise InvalidInput("through_month", exc.message) from None
    fy = fiscal_year(opening.jurisdiction, through.first_day, parameters=tree)
    if fy != opening.fiscal_year:
        raise InvalidInput("through_month", f"{through} is in fiscal year {fy}, not {opening.fiscal_year}")
    known = {f.code for f in funds(opening.jurisdiction, through.first_day, tree)}
    amounts: dict[str, Decimal] = {}
    for code, amount in sorted(opening.transferred.items()):
        if code not in known:
            raise InvalidInput(
                f"transferred.{code}",
                f"not a fund of {opening.jurisdiction}; funds: {', '.join(sorted(known))}",
            )
        amounts[code] = _amount(amount, f"transferred.{code}")
    trace = Trace()
    state = rule.opening(amounts, fy, str(through), tree, trace)
    return OpeningApplied(state=state, trace=trace.to_list())


def takes_certification(jurisdiction: str, on: date, parameters: ParameterTree | None = None) -> bool:
    """Whether ``jurisdiction``'s distribution takes the Bank's certification
    (``distribution.certification_required``: PR §31(A) yes; VI no)."""
    tree = _tree(parameters)
    if not tree.has(jurisdiction, "distribution.certification_required"):
        return False
    try:
        return tree.value(jurisdiction, "distribution.certification_required", on) is True
    except ParameterError:
        return False


def reported_floors(jurisdiction: str, on: date, parameters: ParameterTree | None = None) -> list[Floor]:
    """The annual floors of ``jurisdiction``'s funds in force on ``on`` (PR: the Convention
    Bureau's, §31(B)(iii); VI: the four §54(e)(1) floors)."""
    return distribution_rule(jurisdiction).floors(on, _tree(parameters))


def debt_service_status(
    jurisdiction: str, fiscal_year: int, state: BaseModel | Mapping[str, Any] | None
) -> DebtServiceStatus | None:
    """The certified debt service of a fiscal year after the run that left ``state`` (None:
    no run yet), or None where the distribution has no debt service (VI)."""
    rule = distribution_rule(jurisdiction)
    st = rule.state_model(fiscal_year=fiscal_year) if state is None else _state(rule, state)
    return rule.debt_service(st)


def pending_section(jurisdiction: str, on: date, parameters: ParameterTree | None = None) -> str:
    """Citation of money held pending (PR: ``distribution.uncertified_month``, §31(A)-(B)); ""
    where nothing is ever held."""
    tree = _tree(parameters)
    if not tree.has(jurisdiction, "distribution.uncertified_month"):
        return ""
    try:
        return tree.get(jurisdiction, "distribution.uncertified_month", on).section
    except ParameterError:
        return ""
