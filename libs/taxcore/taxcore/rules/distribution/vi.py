"""The Virgin Islands' distribution (33 V.I.C. §54(e), (b)(3)(D)): the annual floors,
the Tourism Advertising Revolving Fund and its impact-fee earmarks, the General Fund."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import ZERO, round_cents
from taxcore.parameters import ParameterTree
from taxcore.periods import Period
from taxcore.rules.distribution.machinery import (
    _RULE,
    _amount,
    _check_order,
    _cumulative,
    _month_index,
    _result,
    _section_of,
    _tree,
    funds,
)
from taxcore.rules.distribution.models import (
    DistributionResult,
    Floor,
    Fund,
    FundAllocation,
    PRCertification,
    VIState,
)
from taxcore.trace import Trace

VI_TARF = "vi_tourism_advertising_revolving_fund"


VI_GENERAL_FUND = "vi_general_fund"


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
