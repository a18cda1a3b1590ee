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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree, default_tree
from taxcore.periods import Period, fiscal_year, fiscal_year_months
from taxcore.trace import Trace

__all__ = [
    "BankCertification",
    "DebtServiceStatus",
    "DistributionResult",
    "Floor",
    "Fund",
    "FundAllocation",
    "JurisdictionDistribution",
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

PR_BANK = "pr_bank_special_account"
PR_COMPANY = "pr_company_administration"
PR_TREASURY = "pr_treasury_general_fund"
PR_BUREAU = "pr_convention_bureau"
PR_REMAINDER = "pr_remainder"
VI_TARF = "vi_tourism_advertising_revolving_fund"
VI_GENERAL_FUND = "vi_general_fund"

_RULE = "rule6.distribution"


# --------------------------------------------------------------------------- models


class Fund(BaseModel):
    """A public fund that receives collections."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    name: str
    section: str


class FundAllocation(BaseModel):
    """Money of one run allocated to one fund, by one rule."""

    model_config = ConfigDict(extra="forbid")

    fund: str
    amount: Decimal
    rule: str
    section: str


class PRCertification(BaseModel):
    """The Bank's certification of a fiscal year's debt-service amount (§31(A)).

    ``first_year_months_remaining``: set only for the fiscal year in which the
    transfers start (the Act's "fiscal year in which this Act is enacted"):
    each monthly transfer is then amount / months remaining, over the last
    that-many months of the fiscal year. Otherwise 1/10 a month from July.
    """

    model_config = ConfigDict(extra="forbid")

    fiscal_year: int
    amount: Decimal
    certified_on: date
    document_reference: str
    first_year_months_remaining: int | None = None


class PRState(BaseModel):
    """Where a PR fiscal year stands after its last distributed month."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: Literal["PR"] = "PR"
    fiscal_year: int
    last_month: str | None = None
    certification: PRCertification | None = None
    """The fiscal year's certification, once a month was run with it (used when none is passed)."""
    debt_service_scheduled: Decimal = ZERO
    """Installments due to the Bank through ``last_month`` (cumulative)."""
    debt_service_transferred: Decimal = ZERO
    debt_service_arrears: Decimal = ZERO
    """Shortfall carried from earlier fiscal years (``distribution.debt_service_arrears_carry``)."""
    held: Decimal = ZERO
    """Collections pending for want of a certification, released by the first certified month."""
    collected: Decimal = ZERO
    """Tax collected in the fiscal year's months so far (including held months)."""
    distributed_base: Decimal = ZERO
    """Total Tax collected on which §31(B) percentages have been computed so far."""
    company_administration: Decimal = ZERO
    treasury_general_fund: Decimal = ZERO
    convention_bureau: Decimal = ZERO
    remainder: Decimal = ZERO

    @property
    def debt_service_shortfall(self) -> Decimal:
        """What the Bank is still owed for months already run (made up from later excess)."""
        owed: Decimal = (
            self.debt_service_scheduled + self.debt_service_arrears - self.debt_service_transferred
        )
        return owed if owed > 0 else Decimal("0.00")


class VIState(BaseModel):
    """Where a VI fiscal year stands after its last distributed month."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: Literal["VI"] = "VI"
    fiscal_year: int
    last_month: str | None = None
    floors_paid: dict[str, Decimal] = Field(default_factory=dict)
    room_tax: Decimal = ZERO
    impact_fee: Decimal = ZERO
    tarf_room_tax: Decimal = ZERO
    tarf_impact_fee: Decimal = ZERO
    general_fund: Decimal = ZERO


class DistributionResult(BaseModel):
    """One month's distribution: ``sum(allocations) + pending == collected``."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: str
    month: str
    collected: Decimal
    """The money this run distributes: ``collected_in_month + released``."""
    collected_in_month: Decimal
    released: Decimal = ZERO
    """Funds held pending in earlier months and distributed by this run."""
    allocations: list[FundAllocation]
    pending: Decimal
    state: Annotated[PRState | VIState, Field(discriminator="jurisdiction")]
    trace: list[dict[str, Any]]


class OpeningState(BaseModel):
    """What each fund of a jurisdiction received in a fiscal year before the platform's first run.

    ``through_month``: the last month distributed outside the platform (a month of
    ``fiscal_year``); the first run is the month after it. ``transferred``: fund code ->
    amount received this fiscal year through that month (a fund left out received nothing).
    """

    model_config = ConfigDict(extra="forbid")

    jurisdiction: str
    fiscal_year: int
    through_month: str
    transferred: dict[str, Decimal]


class OpeningApplied(BaseModel):
    """The state an :class:`OpeningState` gives the first run, and how it was read."""

    model_config = ConfigDict(extra="forbid")

    state: Annotated[PRState | VIState, Field(discriminator="jurisdiction")]
    trace: list[dict[str, Any]]


# --------------------------------------------------------------------------- helpers


def _tree(parameters: ParameterTree | None) -> ParameterTree:
    return parameters or default_tree()


def _amount(value: Decimal, field: str) -> Decimal:
    if not value.is_finite() or value != round_cents(value):
        raise InvalidInput(field, f"must be an amount in whole cents, got {value}")
    if value < 0:
        raise InvalidInput(field, "must not be negative")
    cents: Decimal = round_cents(value)
    return cents


def _decimal(tree: ParameterTree, jurisdiction: str, path: str, on: date) -> Decimal:
    v = tree.value(jurisdiction, path, on)
    if isinstance(v, bool) or not isinstance(v, Decimal):
        raise ParameterError(path, f"{jurisdiction} {path} must be a number, got {v!r}")
    return v


def _month_index(jurisdiction: str, month: Period, tree: ParameterTree) -> tuple[int, int]:
    fy = fiscal_year(jurisdiction, month.first_day, parameters=tree)
    months = fiscal_year_months(jurisdiction, fy, parameters=tree)
    return fy, months.index(month) + 1


def _check_order(month: Period, last_month: str | None) -> None:
    if last_month is not None and month <= Period.parse(last_month):
        raise InvalidInput("month", f"{month} is not after the state's last month {last_month}")


def _cumulative(amount: Decimal, elapsed: int, installments: int) -> Decimal:
    """What is due by the ``elapsed``-th installment of ``installments`` equal ones."""
    if elapsed <= 0:
        nothing: Decimal = ZERO
        return nothing
    if elapsed >= installments:
        return amount
    due: Decimal = round_cents(amount * elapsed / installments)
    return due


def funds(jurisdiction: str, on: date, parameters: ParameterTree | None = None) -> list[Fund]:
    """The funds of ``jurisdiction`` in force on ``on``, in order of priority."""
    pv = _tree(parameters).get(jurisdiction, "distribution.funds", on)
    if not isinstance(pv.value, list):
        raise ParameterError("distribution.funds", f"{jurisdiction}: must be a list")
    result: list[Fund] = []
    for item in pv.value:
        if not isinstance(item, dict):
            raise ParameterError("distribution.funds", f"{jurisdiction}: bad fund {item!r}")
        result.append(Fund(code=str(item["code"]), name=str(item["name"]), section=str(item["section"])))
    return result


def _section_of(fund_list: list[Fund], code: str) -> str:
    for f in fund_list:
        if f.code == code:
            return f.section
    raise ParameterError("distribution.funds", f"fund {code!r} is not defined")


# --------------------------------------------------------------------------- Puerto Rico


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


def _result(
    jurisdiction: str,
    period: Period,
    collected_in_month: Decimal,
    released: Decimal,
    allocations: list[FundAllocation],
    pending: Decimal,
    state: PRState | VIState,
    trace: Trace,
) -> DistributionResult:
    total = sum((a.amount for a in allocations), ZERO)
    collected = collected_in_month + released
    if total + pending != collected:  # pragma: no cover - an invariant, not an input error
        raise AssertionError(f"distribution does not conserve money: {total} + {pending}")
    trace.add(
        f"{_RULE}.conservation",
        "",
        f"allocated {total} + pending {pending} = collected {collected_in_month} + released {released}",
        collected,
    )
    return DistributionResult(
        jurisdiction=jurisdiction,
        month=str(period),
        collected=collected,
        collected_in_month=collected_in_month,
        released=released,
        allocations=allocations,
        pending=pending,
        state=state,
        trace=trace.to_list(),
    )


# --------------------------------------------------------------------------- Virgin Islands


def _vi_rollover(state: VIState | None, fy: int, trace: Trace) -> VIState:
    if state is None:
        return VIState(fiscal_year=fy)
    if state.jurisdiction != "VI":  # pragma: no cover - guarded by the type
        raise InvalidInput("state", "not a VI state")
    if state.fiscal_year == fy:
        return state.model_copy(deep=True)
    if state.fiscal_year > fy:
        raise InvalidInput("state", f"state is for fiscal year {state.fiscal_year}, after {fy}")
    trace.add(
        f"{_RULE}.vi.rollover",
        "§54(e)(1)",
        f"new fiscal year {fy}: floors restart (paid in FY {state.fiscal_year}: "
        + ", ".join(f"{k} {v}" for k, v in state.floors_paid.items())
        + ")",
        None,
    )
    return VIState(fiscal_year=fy, last_month=state.last_month)


def distribute_vi_month(
    *,
    month: str,
    room_tax: Decimal,
    impact_fee: Decimal,
    state: VIState | None,
    parameters: ParameterTree | None = None,
) -> DistributionResult:
    """Distribute one month of VI room tax and impact fee collections (§54(e), (b)(3)(D))."""
    tree = _tree(parameters)
    period = Period.parse(month)
    on = period.first_day
    trace = Trace()
    tax_in = _amount(room_tax, "room_tax")
    fee_in = _amount(impact_fee, "impact_fee")
    fy, index = _month_index("VI", period, tree)
    st = _vi_rollover(state, fy, trace)
    _check_order(period, st.last_month)
    fund_list = funds("VI", on, tree)
    st.last_month = str(period)
    st.room_tax += tax_in
    st.impact_fee += fee_in
    allocations: list[FundAllocation] = []

    # §54(e)(1)(A)-(D): the floors, in installments with catch-up, before the Fund.
    floors_pv = tree.get("VI", "distribution.room_tax_floors", on)
    schedule_pv = tree.get("VI", "distribution.floor_schedule", on)
    if not isinstance(floors_pv.value, list) or not isinstance(schedule_pv.value, dict):
        raise ParameterError("distribution.room_tax_floors", "floors must be a list, schedule a map")
    rest = tax_in
    for floor in floors_pv.value:
        if not isinstance(floor, dict) or not isinstance(floor.get("amount"), Decimal):
            raise ParameterError("distribution.room_tax_floors", f"bad floor {floor!r}")
        code = str(floor["fund"])
        plan = schedule_pv.value.get(code)
        if not isinstance(plan, dict) or not isinstance(plan.get("installments"), Decimal):
            raise ParameterError("distribution.floor_schedule", f"no installments for {code}")
        installments = int(plan["installments"])
        owed = _cumulative(floor["amount"], index, installments)
        paid_before = st.floors_paid.get(code, ZERO)
        due = max(ZERO, owed - paid_before)
        paid = min(rest, due)
        rest -= paid
        st.floors_paid[code] = paid_before + paid
        section = str(floor["section"])
        trace.add(
            f"{_RULE}.vi.floor",
            section,
            f"{code}: floor {floor['amount']} in {installments} installments; owed by month "
            f"{index} {owed}, paid before {paid_before}, due {due}, paid {paid}"
            + ("" if paid == due else f" (short {due - paid}, made up in later months)"),
            paid,
            parameters={
                "floor": floor["amount"],
                "installments": installments,
                "schedule_provisional": schedule_pv.provisional,
            },
        )
        allocations.append(FundAllocation(fund=code, amount=paid, rule="vi.room_tax_floor", section=section))
    st.tarf_room_tax += rest
    tarf_section = _section_of(fund_list, VI_TARF)
    trace.add(
        f"{_RULE}.vi.tarf_room_tax",
        tarf_section,
        f"room tax {tax_in} less floors {tax_in - rest} = {rest} to the Fund",
        rest,
    )
    allocations.append(
        FundAllocation(fund=VI_TARF, amount=rest, rule="vi.room_tax_after_floors", section=tarf_section)
    )

    # §54(b)(3)(D): the impact fee, 15% to the Fund (split among the four earmark funds of
    # §54(e)(2)), the rest (85%) to the General Fund.
    tarf_pv = tree.get("VI", "distribution.impact_fee_tarf_rate", on)
    gf_pv = tree.get("VI", "distribution.impact_fee_general_fund_rate", on)
    tarf_rate, gf_rate = tarf_pv.value, gf_pv.value
    if not isinstance(tarf_rate, Decimal) or not isinstance(gf_rate, Decimal):
        raise ParameterError("distribution.impact_fee_tarf_rate", "rates must be numbers")
    if tarf_rate + gf_rate != 1:
        raise ParameterError("distribution.impact_fee_general_fund_rate", f"{tarf_rate} + {gf_rate} is not 1")
    tarf_fee = round_cents(fee_in * tarf_rate)
    general = fee_in - tarf_fee
    st.tarf_impact_fee += tarf_fee
    st.general_fund += general
    trace.add(
        f"{_RULE}.vi.impact_fee_tarf",
        tarf_pv.section,
        f"impact fee {fee_in} x {tarf_rate} = {tarf_fee} to the Fund, split among the four "
        "purposes of §54(e)(2)",
        tarf_fee,
        parameters={"rate": tarf_rate},
    )
    allocations.extend(_vi_tarf_earmarks(tree, on, fund_list, tarf_fee, tarf_pv.section, trace))
    trace.add(
        f"{_RULE}.vi.impact_fee_general_fund",
        gf_pv.section,
        f"impact fee {fee_in} - {tarf_fee} = {general} to the General Fund ({gf_rate})",
        general,
        parameters={"rate": gf_rate, "provisional": gf_pv.provisional},
    )
    allocations.append(
        FundAllocation(
            fund=VI_GENERAL_FUND, amount=general, rule="vi.impact_fee_general_fund", section=gf_pv.section
        )
    )
    _section_of(fund_list, VI_GENERAL_FUND)
    return _result("VI", period, tax_in + fee_in, ZERO, allocations, ZERO, st, trace)


def _vi_tarf_earmarks(
    tree: ParameterTree, on: date, fund_list: list[Fund], tarf_fee: Decimal, tarf_section: str, trace: Trace
) -> list[FundAllocation]:
    """§54(e)(2): the Fund's impact-fee share split among the earmark funds of its four purposes.

    Rounded on the running total: the first k earmarks together get ``tarf_fee x (sum of
    their rates)`` rounded half-up once, and each earmark is the difference from the one
    before. So every share is within half a cent of its exact rate, none is negative, and
    the earmarks add up to ``tarf_fee`` to the cent (the last running total is the whole).
    """
    path = "distribution.tarf_impact_fee_purposes"
    pv = tree.get("VI", path, on)
    if not isinstance(pv.value, list) or not pv.value:
        raise ParameterError(path, "must be a non-empty list of {fund, rate}")
    shares: list[tuple[str, Decimal]] = []
    for item in pv.value:
        rate = item.get("rate") if isinstance(item, dict) else None
        if not isinstance(item, dict) or isinstance(rate, bool) or not isinstance(rate, Decimal) or rate < 0:
            raise ParameterError(path, f"bad purpose {item!r}")
        shares.append((str(item["fund"]), rate))
    if sum((rate for _, rate in shares), ZERO) != 1:
        raise ParameterError(path, "the purposes' rates do not add up to 1")
    allocations: list[FundAllocation] = []
    cumulative_rate = ZERO
    given = ZERO
    for code, rate in shares:
        cumulative_rate += rate
        running = round_cents(tarf_fee * cumulative_rate)
        part = running - given
        given = running
        fund_section = _section_of(fund_list, code)
        section = f"{tarf_section}; {fund_section}"
        trace.add(
            f"{_RULE}.vi.impact_fee_tarf_earmark",
            section,
            f"{code}: {cumulative_rate} x {tarf_fee} = {running} so far, less {running - part} = {part}",
            part,
            parameters={"rate": rate, "provisional": pv.provisional},
        )
        allocations.append(FundAllocation(fund=code, amount=part, rule="vi.impact_fee_tarf", section=section))
    return allocations


# --------------------------------------------------------------------------- any jurisdiction
#
# Services call only the functions below. Each jurisdiction's statute is one entry of
# ``_RULES`` (a small module of its own for a third one), and what the services need to
# know about it (does it take a Bank certification, which floors it reports) is data.

#: The certification a month's distribution may take (PR §31(A)); the generic name.
BankCertification = PRCertification


class Floor(BaseModel):
    """An annual least amount a fund receives, owed in ``installments`` equal monthly parts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fund: str
    annual: Decimal
    installments: int
    section: str


class DebtServiceStatus(BaseModel):
    """Where a fiscal year's certified debt service stands (PR §31(A))."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheduled_to_date: Decimal
    transferred: Decimal
    arrears_carried: Decimal
    shortfall: Decimal
    held: Decimal


@dataclass(frozen=True, slots=True)
class JurisdictionDistribution:
    """One jurisdiction's distribution rule, as the generic entry points use it.

    ``distribute(month, amounts, certification, state, tree)`` gets the amounts by
    component (only ``components``), the certification (or None) and the state already
    validated as ``state_model`` (or None); ``floors(on, tree)`` lists the floors reported
    against; ``debt_service(state)`` the certified debt service, or None if there is none.
    """

    components: frozenset[str]
    state_model: type[PRState] | type[VIState]
    distribute: Callable[
        [str, Mapping[str, Decimal], PRCertification | None, Any, ParameterTree], DistributionResult
    ]
    floors: Callable[[date, ParameterTree], list[Floor]]
    debt_service: Callable[[Any], DebtServiceStatus | None]
    #: ``opening(transferred, fiscal_year, through_month, tree, trace)`` -> the state after
    #: ``through_month`` (amounts validated: fund codes of the jurisdiction, whole cents);
    #: None: the jurisdiction takes no opening state (its first run starts empty).
    opening: Callable[[Mapping[str, Decimal], int, str, ParameterTree, Trace], Any] | None = None


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


def _vi_distribute(
    month: str,
    amounts: Mapping[str, Decimal],
    certification: PRCertification | None,
    state: VIState | None,
    tree: ParameterTree,
) -> DistributionResult:
    if certification is not None:
        raise InvalidInput("certification", "the VI distribution (§54(e), (b)(3)(D)) takes no certification")
    return distribute_vi_month(
        month=month,
        room_tax=amounts.get("tax", ZERO),
        impact_fee=amounts.get("impact_fee", ZERO),
        state=state,
        parameters=tree,
    )


def _vi_floors(on: date, tree: ParameterTree) -> list[Floor]:
    floors = tree.value("VI", "distribution.room_tax_floors", on)
    schedule = tree.value("VI", "distribution.floor_schedule", on)
    if not isinstance(floors, list) or not isinstance(schedule, dict):
        raise ParameterError("distribution.room_tax_floors", "floors must be a list, schedule a map")
    return [
        Floor(
            fund=str(f["fund"]),
            annual=f["amount"],
            installments=int(schedule[f["fund"]]["installments"]),
            section=str(f["section"]),
        )
        for f in floors
    ]


def _no_debt_service(state: VIState) -> None:
    return None


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


def _vi_opening(
    transferred: Mapping[str, Decimal], fy: int, through: str, tree: ParameterTree, trace: Trace
) -> VIState:
    """§54(e)(1): what each floor received counts toward its installments; the room tax of those
    months is the floors plus the Fund's room-tax share, the impact fee the four earmarks plus
    the General Fund (§54(b)(3)(D))."""
    on = Period.parse(through).first_day
    floors = {str(f["fund"]) for f in _vi_floors_raw(tree, on)}
    purposes = tree.value("VI", "distribution.tarf_impact_fee_purposes", on)
    if not isinstance(purposes, list):
        raise ParameterError("distribution.tarf_impact_fee_purposes", "must be a list")
    earmarks = {str(p["fund"]) for p in purposes if isinstance(p, dict)}
    floors_paid = {code: transferred.get(code, ZERO) for code in sorted(floors)}
    tarf_room = transferred.get(VI_TARF, ZERO)
    tarf_fee = sum((transferred.get(code, ZERO) for code in earmarks), ZERO)
    general = transferred.get(VI_GENERAL_FUND, ZERO)
    room_tax = sum(floors_paid.values(), ZERO) + tarf_room
    trace.add(
        f"{_RULE}.vi.opening",
        "§54(e)(1)",
        f"opening state of FY {fy} through {through}: floors paid "
        + ", ".join(f"{k} {v}" for k, v in floors_paid.items())
        + f"; room tax {room_tax}, impact fee {tarf_fee + general}",
        room_tax + tarf_fee + general,
        inputs={k: str(v) for k, v in sorted(transferred.items())},
    )
    return VIState(
        fiscal_year=fy,
        last_month=through,
        floors_paid=floors_paid,
        room_tax=room_tax,
        impact_fee=tarf_fee + general,
        tarf_room_tax=tarf_room,
        tarf_impact_fee=tarf_fee,
        general_fund=general,
    )


def _vi_floors_raw(tree: ParameterTree, on: date) -> list[dict[str, Any]]:
    floors = tree.value("VI", "distribution.room_tax_floors", on)
    if not isinstance(floors, list) or not all(isinstance(f, dict) for f in floors):
        raise ParameterError("distribution.room_tax_floors", "must be a list of {fund, amount, section}")
    return floors


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
