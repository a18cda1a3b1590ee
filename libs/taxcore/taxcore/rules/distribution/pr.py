"""Puerto Rico's distribution (Act 272-2003 §31): the Bank's debt-service installments
(§31(A)) first, then the Company, Treasury and Convention Bureau shares of the excess
(§31(B)), the rest to ``pr_remainder``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree
from taxcore.periods import Period
from taxcore.rules.distribution.machinery import (
    _RULE,
    _amount,
    _check_order,
    _cumulative,
    _decimal,
    _month_index,
    _result,
    _section_of,
    _tree,
    funds,
)
from taxcore.rules.distribution.models import (
    DebtServiceStatus,
    DistributionResult,
    Floor,
    FundAllocation,
    PRCertification,
    PRState,
)
from taxcore.trace import Trace

PR_BANK = "pr_bank_special_account"


PR_COMPANY = "pr_company_administration"


PR_TREASURY = "pr_treasury_general_fund"


PR_BUREAU = "pr_convention_bureau"


PR_REMAINDER = "pr_remainder"


def _pr_rollover(state: PRState | None, fy: int, tree: ParameterTree, on: date, trace: Trace) -> PRState:
    if state is None:
        return PRState(fiscal_year=fy)
    if state.jurisdiction != "PR":  # pragma: no cover - guarded by the type
        raise InvalidInput("state", "not a PR state")
    if state.fiscal_year == fy:
        return state.model_copy(deep=True)
    if state.fiscal_year > fy:
        raise InvalidInput("state", f"state is for fiscal year {state.fiscal_year}, after {fy}")
    carry = tree.get("PR", "distribution.debt_service_arrears_carry", on)
    arrears = state.debt_service_shortfall if carry.value is True else ZERO
    trace.add(
        f"{_RULE}.pr.rollover",
        carry.section,
        f"new fiscal year {fy}: debt-service shortfall {state.debt_service_shortfall} of FY "
        f"{state.fiscal_year} {'carried' if carry.value is True else 'not carried'}; "
        f"held collections {state.held} stay pending; the Bureau's floor restarts",
        arrears,
        parameters={"debt_service_arrears_carry": carry.value, "provisional": carry.provisional},
    )
    return PRState(
        fiscal_year=fy,
        last_month=state.last_month,
        debt_service_arrears=arrears,
        held=state.held,
    )


def _pr_schedule(cert: PRCertification, index: int, installments: int) -> tuple[Decimal, str]:
    """Cumulative debt service due by the ``index``-th month of the fiscal year (§31(A))."""
    remaining = cert.first_year_months_remaining
    if remaining is not None:
        if not 1 <= remaining <= 12:
            raise InvalidInput("certification.first_year_months_remaining", "must be 1..12")
        first = 12 - remaining + 1
        due = _cumulative(cert.amount, index - first + 1, remaining)
        return due, f"first fiscal year: 1/{remaining} a month over its last {remaining} months"
    return _cumulative(cert.amount, index, installments), f"1/{installments} a month from July"


def distribute_pr_month(
    *,
    month: str,
    collected: Decimal,
    certification: PRCertification | None,
    state: PRState | None,
    parameters: ParameterTree | None = None,
) -> DistributionResult:
    """Distribute one month of PR room occupancy tax collections (§31(A)-(B))."""
    tree = _tree(parameters)
    period = Period.parse(month)
    on = period.first_day
    trace = Trace()
    amount_in = _amount(collected, "collected")
    fy, index = _month_index("PR", period, tree)
    st = _pr_rollover(state, fy, tree, on, trace)
    _check_order(period, st.last_month)
    fund_list = funds("PR", on, tree)
    st.last_month = str(period)
    st.collected += amount_in

    if certification is None and st.certification is not None:
        certification = st.certification
        trace.add(
            f"{_RULE}.pr.certification",
            "§31(A)",
            f"using the certification already on file for FY {fy} ({certification.document_reference})",
            certification.amount,
        )
    if certification is None:
        mode = tree.get("PR", "distribution.uncertified_month", on)
        if mode.value != "hold":
            raise ParameterError("distribution.uncertified_month", f"unknown mode {mode.value!r}")
        st.held += amount_in
        trace.add(
            f"{_RULE}.pr.uncertified",
            mode.section,
            f"no Bank certification for FY {fy}: the month's {amount_in} is held pending "
            f"(pending now {st.held}); the first certified month releases it",
            amount_in,
            inputs={"month": str(period), "fiscal_year": fy, "month_of_fiscal_year": index},
            parameters={"uncertified_month": mode.value, "provisional": mode.provisional},
        )
        return DistributionResult(
            jurisdiction="PR",
            month=str(period),
            collected=amount_in,
            collected_in_month=amount_in,
            released=ZERO,
            allocations=[],
            pending=amount_in,
            state=st,
            trace=trace.to_list(),
        )

    if certification.fiscal_year != fy:
        raise InvalidInput(
            "certification.fiscal_year",
            f"certification is for FY {certification.fiscal_year}, month {period} is in FY {fy}",
        )
    certified = _amount(certification.amount, "certification.amount")
    cert = certification.model_copy(update={"amount": certified})
    released = st.held
    st.held = ZERO
    st.certification = cert
    available = amount_in + released
    base = available  # "the total Tax collected" on which §31(B) percentages are computed

    # §31(A): the monthly transfer to the Bank, plus any shortfall of earlier months.
    installments = int(_decimal(tree, "PR", "distribution.debt_service_installments", on))
    scheduled, how = _pr_schedule(cert, index, installments)
    this_installment = scheduled - st.debt_service_scheduled
    st.debt_service_scheduled = scheduled
    owed = st.debt_service_shortfall
    bank = min(available, owed)
    st.debt_service_transferred += bank
    rest = available - bank
    bank_section = _section_of(fund_list, PR_BANK)
    trace.add(
        f"{_RULE}.pr.debt_service",
        bank_section,
        f"certified {certified} ({certification.document_reference}), {how}: installment "
        f"{this_installment} + earlier shortfall {owed - this_installment}; transferred "
        f"min({available}, {owed}); shortfall left {st.debt_service_shortfall}",
        bank,
        inputs={
            "month_of_fiscal_year": index,
            "available": available,
            "released": released,
            "scheduled_to_date": scheduled,
            "transferred_to_date": st.debt_service_transferred,
        },
        parameters={"certified_amount": certified, "installments": installments},
    )
    allocations = [
        FundAllocation(fund=PR_BANK, amount=bank, rule="pr.debt_service_transfer", section=bank_section)
    ]

    # §31(B)(i)-(ii): percentages of the total Tax collected, out of the excess.
    for code, path, rule, attr in (
        (
            PR_COMPANY,
            "distribution.company_administration_rate",
            "pr.company_administration",
            "company_administration",
        ),
        (
            PR_TREASURY,
            "distribution.treasury_general_fund_rate",
            "pr.treasury_general_fund",
            "treasury_general_fund",
        ),
    ):
        rate = _decimal(tree, "PR", path, on)
        share = round_cents(base * rate)
        paid = min(rest, share)
        rest -= paid
        setattr(st, attr, getattr(st, attr) + paid)
        section = _section_of(fund_list, code)
        trace.add(
            f"{_RULE}.pr.{attr}",
            section,
            f"{rate} x {base} = {share}; paid {paid} of the {rest + paid} left after the Bank"
            + ("" if paid == share else f" (short {share - paid}, not made up: no catch-up in text)"),
            paid,
            parameters={"rate": rate},
        )
        allocations.append(FundAllocation(fund=code, amount=paid, rule=rule, section=section))

    # §31(B)(iii): the Convention Center Bureau, 9% with an annual floor paid monthly.
    bureau_rate = _decimal(tree, "PR", "distribution.convention_bureau_rate", on)
    st.distributed_base += base
    by_rate = round_cents(st.distributed_base * bureau_rate)
    floor_pv = tree.get("PR", "distribution.convention_bureau_annual_floor", on)
    floor = floor_pv.value
    if not isinstance(floor, Decimal):
        raise ParameterError("distribution.convention_bureau_annual_floor", "must be a number")
    installment = _decimal(tree, "PR", "distribution.convention_bureau_monthly_installment", on)
    by_floor = min(floor, installment * index)
    entitled = max(by_rate, by_floor)
    due = max(ZERO, entitled - st.convention_bureau)
    bureau = min(rest, due)
    rest -= bureau
    st.convention_bureau += bureau
    bureau_section = _section_of(fund_list, PR_BUREAU)
    trace.add(
        f"{_RULE}.pr.convention_bureau",
        bureau_section,
        f"owed by month {index}: max({bureau_rate} x {st.distributed_base} = {by_rate}, "
        f"min({floor}, {installment} x {index}) = {by_floor}) = {entitled}; paid so far "
        f"{st.convention_bureau - bureau}; due {due}; paid {bureau}"
        + ("" if bureau == due else f"; short {due - bureau}, made up in later months"),
        bureau,
        inputs={"tax_collected_to_date": st.distributed_base},
        parameters={
            "rate": bureau_rate,
            "annual_floor": floor,
            "monthly_installment": installment,
            "floor_provisional": floor_pv.provisional,
        },
    )
    allocations.append(
        FundAllocation(fund=PR_BUREAU, amount=bureau, rule="pr.convention_bureau", section=bureau_section)
    )

    # The rest: destination past the end of our text (provisional).
    st.remainder += rest
    remainder_section = _section_of(fund_list, PR_REMAINDER)
    trace.add(
        f"{_RULE}.pr.remainder",
        remainder_section,
        f"remainder {available} - {available - rest} = {rest} (provisional: our text ends "
        "inside §31(B)(iii))",
        rest,
    )
    allocations.append(
        FundAllocation(fund=PR_REMAINDER, amount=rest, rule="pr.remainder", section=remainder_section)
    )
    return _result("PR", period, amount_in, released, allocations, ZERO, st, trace)


def _pr_distribute(
    month: str,
    amounts: Mapping[str, Decimal],
    certification: PRCertification | None,
    state: PRState | None,
    tree: ParameterTree,
) -> DistributionResult:
    return distribute_pr_month(
        month=month,
        collected=amounts.get("tax", ZERO),
        certification=certification,
        state=state,
        parameters=tree,
    )


def _pr_floors(on: date, tree: ParameterTree) -> list[Floor]:
    floor = tree.get("PR", "distribution.convention_bureau_annual_floor", on)
    if not isinstance(floor.value, Decimal):
        raise ParameterError("distribution.convention_bureau_annual_floor", "must be a number")
    installment = _decimal(tree, "PR", "distribution.convention_bureau_monthly_installment", on)
    return [
        Floor(
            fund=PR_BUREAU,
            annual=floor.value,
            installments=int(floor.value / installment),
            section=floor.section,
        )
    ]


def _pr_debt_service(state: PRState) -> DebtServiceStatus:
    return DebtServiceStatus(
        scheduled_to_date=state.debt_service_scheduled,
        transferred=state.debt_service_transferred,
        arrears_carried=state.debt_service_arrears,
        shortfall=state.debt_service_shortfall,
        held=state.held,
    )


def _pr_opening(
    transferred: Mapping[str, Decimal], fy: int, through: str, tree: ParameterTree, trace: Trace
) -> PRState:
    """§31: the Bank's transfers so far count against the schedule (a shortfall is still made
    up by the first run, never a second time what was paid); every dollar collected in those
    months was distributed, so the §31(B) base (the 9% of the Bureau) is their sum."""
    on = Period.parse(through).first_day
    bank = transferred.get(PR_BANK, ZERO)
    base = sum(transferred.values(), ZERO)
    trace.add(
        f"{_RULE}.pr.opening",
        _section_of(funds("PR", on, tree), PR_BANK),
        f"opening state of FY {fy} through {through}: the Bank received {bank} (counted against "
        f"the §31(A) schedule); Tax collected and distributed {base} (the §31(B) base so far)",
        base,
        inputs={k: str(v) for k, v in sorted(transferred.items())},
    )
    return PRState(
        fiscal_year=fy,
        last_month=through,
        debt_service_scheduled=bank,
        debt_service_transferred=bank,
        collected=base,
        distributed_base=base,
        company_administration=transferred.get(PR_COMPANY, ZERO),
        treasury_general_fund=transferred.get(PR_TREASURY, ZERO),
        convention_bureau=transferred.get(PR_BUREAU, ZERO),
        remainder=transferred.get(PR_REMAINDER, ZERO),
    )
