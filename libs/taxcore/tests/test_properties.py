"""Property: every trace adds up to its result, for any valid declaration."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from taxcore.money import round_cents
from taxcore.rules._common import verify_trace
from taxcore.rules.declaration import (
    LINES,
    CompValuation,
    DeclarationInput,
    ExemptAmount,
    compute_declaration,
)
from taxcore.rules.estimate import estimate_assessment

cents = st.integers(min_value=0, max_value=10_000_000).map(lambda c: Decimal(c) / 100)
per_night = st.integers(min_value=0, max_value=100_000).map(lambda c: Decimal(c) / 100)

PR_CLASSES = [
    "hotel",
    "condohotel",
    "apartment_hotel",
    "hostelry",
    "guesthouse",
    "inn",
    "motel",
    "short_term_rental",
    "government_recreational_facility",
    "all_inclusive_hotel",
]
PR_LINES = [n for n in LINES if n not in ("all_inclusive_global_charges",)]
VI_LINES = [n for n in LINES if n != "all_inclusive_global_charges"]


@st.composite
def declarations(draw: st.DrawFn) -> DeclarationInput:
    jur = draw(st.sampled_from(["PR", "VI"]))
    period = f"{draw(st.integers(2018, 2030))}-{draw(st.integers(1, 12)):02d}"
    amounts = {n: draw(cents) for n in (PR_LINES if jur == "PR" else VI_LINES)}
    kw: dict[str, object] = {}
    if jur == "PR":
        cls = draw(st.sampled_from(PR_CLASSES))
        if cls == "all_inclusive_hotel":
            amounts["all_inclusive_global_charges"] = draw(cents)
        comp_kinds = ["comp"] if cls == "all_inclusive_hotel" else ["comp", "bundled"]
        kw["comp_rooms"] = draw(
            st.lists(
                st.builds(
                    CompValuation,
                    kind=st.sampled_from(comp_kinds),
                    room_nights=st.integers(0, 500),
                    average_daily_rate=per_night,
                    room_cost=per_night,
                    industry_cost=per_night,
                ),
                max_size=3,
            )
        )
        names = ["pr_film_production", "pr_timeshare"]
        kw["casino"] = draw(st.booleans())
    else:
        cls = draw(st.sampled_from(["hotel", "apartment_condominium_residence", "timeshare"]))
        names = ["vi_long_stay"] if cls != "hotel" else []
        if cls == "timeshare":
            names.append("vi_timeshare_owner")
            kw["timeshare_owner_unit_days"] = draw(st.integers(0, 3000))
        kw["tax_itemized"] = draw(st.booleans())
    taxed = [n for n in amounts if not (jur == "PR" and n == "intermediary_retained")]
    gross_lines = sum((amounts[n] for n in taxed), Decimal(0))
    exempt = []
    budget = gross_lines
    for name in draw(st.lists(st.sampled_from(names), max_size=3)) if names else []:
        amount = round_cents(budget * Decimal(draw(st.integers(0, 100))) / 100)
        budget -= amount
        exempt.append(ExemptAmount(exemption=name, amount=amount, evidence="CERT-1"))
    nights = draw(st.integers(1, 5000))
    return DeclarationInput(
        jurisdiction=jur,
        lodging_class=cls,
        period=period,
        room_nights=nights,
        exempt=exempt,
        **amounts,
        **kw,
    )


@settings(max_examples=300, deadline=None)
@given(declarations())
def test_trace_adds_up_to_the_result(inp: DeclarationInput) -> None:
    r = compute_declaration(inp)
    assert verify_trace(r.trace) == []
    steps = r.trace.steps
    last = {s.rule: s.result for s in steps}
    assert last["gross_receipts"] == r.gross_receipts
    assert last["taxable_base"] == r.taxable_base
    assert last["rate"] == r.rate
    assert last["tax"] == r.tax
    assert last["total_due"] == r.total_due
    # taxable base = sum of the line and valuation steps plus the (negative) exemptions
    added = sum(
        (
            s.result
            for s in steps
            if s.rule in ("gross_receipts.line", "gross_receipts.comp_valuation", "exemption")
            and isinstance(s.result, Decimal)
        ),
        Decimal(0),
    )
    assert added == r.taxable_base
    assert r.exempt_total == r.gross_receipts - r.taxable_base
    assert r.tax == round_cents(r.taxable_base * r.rate)
    assert r.total_due == r.tax + r.impact_fee
    for amount in (r.gross_receipts, r.taxable_base, r.tax, r.impact_fee, r.total_due):
        assert amount >= 0
        assert amount == round_cents(amount)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["PR", "VI"]),
    st.lists(cents, max_size=15),
    st.integers(0, 500),
    st.one_of(st.none(), per_night),
    st.one_of(st.none(), per_night),
)
def test_estimate_trace_adds_up(
    jur: str, history: list[Decimal], rooms: int, adr: Decimal | None, cost: Decimal | None
) -> None:
    if not history and adr is None and cost is None:
        adr = Decimal(1)
    est = estimate_assessment(
        jurisdiction=jur,
        lodging_class="hotel",
        casino=False,
        period="2026-02",
        history=history,
        room_count=rooms,
        average_daily_rate=adr,
        room_cost=cost,
    )
    assert verify_trace(est.trace) == []
    assert est.taxable_base >= max(history[-12:], default=Decimal(0))
    assert est.total_due == est.tax + est.impact_fee
