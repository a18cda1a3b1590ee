"""Throughput of taxcore declarations on one core.

Run: ``uv run python bench/bench_taxcore.py``. Prints declarations computed per
second for a 10-line declaration (7 money lines, 2 comp/bundled valuations,
1 exemption) and, measured in the same run, a trivial Decimal multiply loop as
the baseline, with the ratio between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal

from taxcore.money import round_cents
from taxcore.rules.declaration import (
    CompValuation,
    DeclarationInput,
    ExemptAmount,
    compute_declaration,
)

TARGET = 20_000


def ten_line_declaration() -> DeclarationInput:
    return DeclarationInput(
        jurisdiction="PR",
        lodging_class="hotel",
        casino=True,
        period="2026-03",
        room_revenue=Decimal("182345.67"),
        paid_unused_rooms=Decimal("2310.00"),
        room_penalties=Decimal("1500.00"),
        resort_and_other_fees=Decimal("9875.25"),
        surcharges_and_service_charges=Decimal("1234.56"),
        intermediary_retained=Decimal("15000.00"),
        all_inclusive_global_charges=Decimal("0"),
        room_nights=1234,
        comp_rooms=[
            CompValuation(
                kind="comp",
                room_nights=40,
                average_daily_rate=Decimal("148.10"),
                room_cost=Decimal("95.00"),
                industry_cost=Decimal("130.00"),
            ),
            CompValuation(
                kind="bundled",
                room_nights=25,
                average_daily_rate=Decimal("148.10"),
                room_cost=Decimal("95.00"),
                industry_cost=Decimal("160.00"),
            ),
        ],
        exempt=[
            ExemptAmount(
                exemption="pr_film_production", amount=Decimal("4200.00"), evidence="PRTC-FILM-2026-014"
            )
        ],
    )


def rate_per_second(fn: Callable[[], object], seconds: float = 2.0) -> float:
    fn()  # warm caches (parameter tree, per-period context)
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(200):
            fn()
        n += 200
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def main() -> None:
    inp = ten_line_declaration()
    result = compute_declaration(inp)
    assert result.tax == Decimal("22328.84"), result.tax

    def declaration() -> object:
        return compute_declaration(inp)

    base, rate = Decimal("182345.67"), Decimal("0.11")

    def baseline() -> object:
        return round_cents(base * rate)

    decl = rate_per_second(declaration)
    mult = rate_per_second(baseline)
    print(f"declarations/s (10-line, one core): {decl:,.0f}  (target >= {TARGET:,})")
    print(f"baseline Decimal multiply+round/s: {mult:,.0f}")
    print(f"ratio baseline/declaration: {mult / decl:,.1f}x")
    if decl < TARGET:
        print("BELOW TARGET")


if __name__ == "__main__":
    main()
