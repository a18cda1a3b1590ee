"""The class plan of a declaration (``taxcore.rules.declaration._plan``): what every return of
one class, casino licence and month derives the same way is derived once, and a return
computed with it has the same figures, the same trace (every step, citation and parameter)
and the same refusals as one computed the general way: the treatment of each line decided
again and the rate chosen by ``select_rate`` for that return."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D
from typing import Any

import pytest
from taxcore_golden import golden_cases

from taxcore.errors import TaxcoreError
from taxcore.jurisdictions import lodging_classes
from taxcore.parameters import PACKAGE_ROOT, default_tree, load_tree
from taxcore.rules import declaration
from taxcore.rules.check import DeclaredFigures, review_declaration
from taxcore.rules.declaration import DeclarationInput, compute_allowed, compute_declaration


def _general(ctx: Any, lodging_class: str, casino: bool) -> Any:
    """A plan derived for this return alone and without its rate: the general path."""
    lines = tuple(
        (name, *declaration._line_treatment(ctx, name, lodging_class)) for name in declaration.LINES
    )
    return declaration._Plan(lines=lines, rate=None)


def _outcome(inp: DeclarationInput, today: date, *, lenient: bool) -> Any:
    """The figures and trace of a return, or its refusal (field and message)."""
    try:
        compute = compute_allowed if lenient else compute_declaration
        result = compute(inp, parameters=default_tree(), today=today)
    except TaxcoreError as exc:
        return (type(exc).__name__, getattr(exc, "field", None), str(exc))
    return result.to_json(explain=True)


def _inputs() -> list[Any]:
    params = []
    for pattern in ("pr_declaration.yaml", "vi_declaration.yaml"):
        for name, case in golden_cases(pattern, "declaration"):
            inp = DeclarationInput(jurisdiction=case["jurisdiction"], **case["input"])
            params.append(pytest.param(inp, case["date"], id=name))
    # every class with and without a casino, an average daily rate above and below the PR
    # motel threshold, and one without room-nights (the rate cannot be measured)
    for jurisdiction in ("PR", "VI"):
        for cls in sorted(lodging_classes(jurisdiction, date(2026, 3, 1))):
            for casino in (False, True):
                for revenue, nights in (("1000.00", 10), ("1000.00", 500), ("1000.00", 0)):
                    inp = DeclarationInput(
                        jurisdiction=jurisdiction,
                        lodging_class=cls,
                        casino=casino,
                        period="2026-03",
                        room_revenue=D(revenue),
                        resort_and_other_fees=D("25.00"),
                        intermediary_retained=D("150.00"),
                        room_nights=nights,
                    )
                    case_id = f"{jurisdiction} {cls} casino={casino} {revenue}/{nights}"
                    params.append(pytest.param(inp, date(2026, 4, 5), id=case_id))
    return params


class TestPlan:
    @pytest.mark.parametrize(("inp", "today"), _inputs())
    @pytest.mark.parametrize("lenient", [False, True])
    def test_same_as_the_general_path(
        self, inp: DeclarationInput, today: date, lenient: bool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        planned = _outcome(inp, today, lenient=lenient)
        again = _outcome(inp, today, lenient=lenient)  # the plan memoized by the first
        with monkeypatch.context() as m:
            m.setattr(declaration, "_plan", _general)
            general = _outcome(inp, today, lenient=lenient)
        assert planned == general
        assert again == general

    def test_derived_once_per_class_and_casino(self) -> None:
        tree = load_tree(PACKAGE_ROOT)
        figures = DeclaredFigures(taxable_base=None, tax=None)
        for revenue in ("100.00", "200.00", "300.00"):
            for casino in (False, True):
                inp = DeclarationInput(
                    jurisdiction="PR",
                    lodging_class="hotel",
                    casino=casino,
                    period="2026-03",
                    room_revenue=D(revenue),
                    room_nights=2,
                )
                review_declaration(inp, figures, parameters=tree, today=date(2026, 4, 5))
        ctx = declaration._context(tree, "PR", date(2026, 3, 1))
        assert sorted(ctx.plans) == [("hotel", False), ("hotel", True)]
        assert ctx.plans[("hotel", False)].rate is not None
        assert ctx.plans[("hotel", False)].rate[0] == D("0.09")
        assert ctx.plans[("hotel", True)].rate is not None
        assert ctx.plans[("hotel", True)].rate[0] == D("0.11")

    def test_the_motel_rate_is_chosen_per_return(self) -> None:
        """PR §24(B), §2(32): the average daily rate of each return decides a motel's rate,
        so its plan holds no rate."""
        tree = load_tree(PACKAGE_ROOT)
        low = DeclarationInput(
            jurisdiction="PR",
            lodging_class="motel",
            period="2026-03",
            room_revenue=D("100.00"),
            room_nights=50,
        )
        high = low.model_copy(update={"room_nights": 1})
        assert (
            compute_declaration(low, parameters=tree).rate != compute_declaration(high, parameters=tree).rate
        )
        ctx = declaration._context(tree, "PR", date(2026, 3, 1))
        assert ctx.plans[("motel", False)].rate is None
