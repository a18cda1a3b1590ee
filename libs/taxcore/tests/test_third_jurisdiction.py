"""A third jurisdiction is data: a copy of the VI folder under the code ``XX`` with its own rate.

Nothing in taxcore is edited: the parameter tree alone makes ``XX`` known, gives it
lodging classes, due dates, a declaration, an agency, a bond rule and exemptions. Only
a distribution whose statute differs in shape needs code, and then one small rule
registered with :func:`taxcore.rules.distribution.register_distribution_rule`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from taxcore.errors import InvalidInput
from taxcore.jurisdictions import (
    certificate_kinds,
    has_casino_rate,
    known_jurisdictions,
    lodging_classes,
    require_jurisdiction,
)
from taxcore.parameters import (
    PACKAGE_ROOT,
    PARAMETERS_ENV,
    ParameterTree,
    default_tree,
    load_tree,
    reset_default_tree,
    value,
)
from taxcore.periods import Period, due_date
from taxcore.rules import distribution
from taxcore.rules.declaration import DeclarationInput, compute_declaration
from taxcore.testing import tree_with_jurisdiction

D = Decimal


def build_xx_root(root: Path) -> Path:
    """The packaged tree plus ``XX``: VI's parameters with a 10% room tax and its own agency."""
    return tree_with_jurisdiction(
        root,
        "XX",
        like="VI",
        edits={
            "rates/room_tax.yaml": ("value: 0.125", "value: 0.10"),
            "agency/name.yaml": ('"Virgin Islands Bureau of Internal Revenue"', '"XX Revenue Office"'),
        },
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> ParameterTree:
    return load_tree(build_xx_root(tmp_path_factory.mktemp("parameters") / "root"))


def _declare(tree: ParameterTree, jurisdiction: str) -> Any:
    inp = DeclarationInput(
        jurisdiction=jurisdiction,
        lodging_class="hotel",
        period="2026-10",
        room_nights=40,
        room_revenue=D("10000.00"),
        resort_and_other_fees=D("250.00"),
    )
    return compute_declaration(inp, parameters=tree, today=date(2026, 11, 15))


class TestDataOnly:
    def test_known_with_the_classes_of_its_folder(self, tree: ParameterTree) -> None:
        assert known_jurisdictions(parameters=tree) == ["PR", "VI", "XX"]
        assert require_jurisdiction("XX", parameters=tree) == "XX"
        assert lodging_classes("XX", date(2026, 10, 1), parameters=tree) == {
            "hotel",
            "apartment_condominium_residence",
            "timeshare",
        }

    def test_declaration_at_its_own_rate(self, tree: ParameterTree) -> None:
        xx = _declare(tree, "XX")
        assert (xx.taxable_base, xx.rate, xx.tax, xx.total_due) == (
            D("10250.00"),
            D("0.10"),
            D("1025.00"),
            D("1025.00"),
        )
        vi = _declare(tree, "VI")  # the copy changed nothing for VI
        assert (vi.rate, vi.tax) == (D("0.125"), D("1281.25"))

    def test_periods_agency_bonds_certificates_from_the_copy(self, tree: ParameterTree) -> None:
        on = date(2026, 10, 1)
        assert due_date("XX", Period.parse("2026-10"), parameters=tree) == date(2026, 11, 30)
        assert value("XX", "agency.name", on, parameters=tree) == "XX Revenue Office"
        assert value("XX", "bonds.required", on, parameters=tree) is False
        assert certificate_kinds("XX", on, parameters=tree) == frozenset()
        assert certificate_kinds("PR", on, parameters=tree) == {"pr_film_production"}
        assert not has_casino_rate("XX", parameters=tree)
        assert has_casino_rate("PR", parameters=tree)
        assert not distribution.takes_certification("XX", on, tree)
        assert distribution.takes_certification("PR", on, tree)


class TestDistributionNeedsAtMostASmallModule:
    def test_without_a_rule_the_generic_entry_point_refuses_on_jurisdiction(
        self, tree: ParameterTree
    ) -> None:
        with pytest.raises(InvalidInput) as e:
            distribution.distribute_month(
                "XX",
                month="2026-10",
                amounts={"tax": D("100.00")},
                certification=None,
                state=None,
                parameters=tree,
            )
        assert e.value.field == "jurisdiction"

    def test_a_registered_rule_is_used_by_the_generic_entry_point(
        self, tree: ParameterTree, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A fictional statute: all the tax to the first fund of ``distribution.funds``."""

        def distribute(
            month: str,
            amounts: Mapping[str, Decimal],
            certification: distribution.BankCertification | None,
            state: distribution.VIState | None,
            tree: ParameterTree,
        ) -> distribution.DistributionResult:
            period = Period.parse(month)
            fund = distribution.funds("XX", period.first_day, tree)[0]
            tax = amounts.get("tax", D("0.00"))
            return distribution.DistributionResult(
                jurisdiction="XX",
                month=month,
                collected=tax,
                collected_in_month=tax,
                allocations=[
                    distribution.FundAllocation(
                        fund=fund.code, amount=tax, rule="xx.all", section=fund.section
                    )
                ],
                pending=D("0.00"),
                state=distribution.VIState(fiscal_year=2027, last_month=month, room_tax=tax),
                trace=[],
            )

        monkeypatch.setitem(
            distribution._RULES,
            "XX",
            distribution.JurisdictionDistribution(
                components=frozenset({"tax"}),
                state_model=distribution.VIState,
                distribute=distribute,
                floors=lambda on, tree: [],
                debt_service=lambda state: None,
            ),
        )
        result = distribution.distribute_month(
            "XX",
            month="2026-10",
            amounts={"tax": D("1025.00"), "impact_fee": D("0.00")},
            certification=None,
            state=None,
            parameters=tree,
        )
        assert [(a.fund, a.amount) for a in result.allocations] == [
            ("vi_tourism_advertising_revolving_fund", D("1025.00"))
        ]
        assert distribution.reported_floors("XX", date(2026, 10, 1), tree) == []
        with pytest.raises(InvalidInput) as e:
            distribution.distribute_month(
                "XX",
                month="2026-10",
                amounts={"impact_fee": D("1.00")},
                certification=None,
                state=None,
                parameters=tree,
            )
        assert e.value.field == "amounts.impact_fee"


class TestGenericEntryPointMatchesThePerJurisdictionFunctions:
    def test_pr_and_vi(self) -> None:
        cert = distribution.BankCertification(
            fiscal_year=2027,
            amount=D("10000000.00"),
            certified_on=date(2026, 6, 15),
            document_reference="B-27",
        )
        pr = distribution.distribute_month(
            "PR", month="2026-07", amounts={"tax": D("2500000.00")}, certification=cert, state=None
        )
        assert pr == distribution.distribute_pr_month(
            month="2026-07", collected=D("2500000.00"), certification=cert, state=None
        )
        pr2 = distribution.distribute_month(
            "PR",
            month="2026-08",
            amounts={"tax": D("900000.00")},
            certification=None,
            state=pr.state.model_dump(mode="json"),
        )
        assert isinstance(pr.state, distribution.PRState)
        assert pr2 == distribution.distribute_pr_month(
            month="2026-08", collected=D("900000.00"), certification=None, state=pr.state
        )
        vi = distribution.distribute_month(
            "VI",
            month="2026-10",
            amounts={"tax": D("150000.00"), "impact_fee": D("10000.00")},
            certification=None,
            state=None,
        )
        assert vi == distribution.distribute_vi_month(
            month="2026-10", room_tax=D("150000.00"), impact_fee=D("10000.00"), state=None
        )
        with pytest.raises(InvalidInput) as e:
            distribution.distribute_month(
                "PR", month="2026-07", amounts={"impact_fee": D("1.00")}, certification=cert, state=None
            )
        assert e.value.field == "amounts.impact_fee"

    def test_floors_debt_service_and_pending_citation(self) -> None:
        on = date(2026, 7, 1)
        assert distribution.reported_floors("PR", on) == [
            distribution.Floor(
                fund="pr_convention_bureau",
                annual=D("4500000"),
                installments=12,
                section=default_tree().get("PR", "distribution.convention_bureau_annual_floor", on).section,
            )
        ]
        assert [
            (f.fund, f.annual, f.installments) for f in distribution.reported_floors("VI", date(2026, 10, 1))
        ] == [
            ("vi_agriculture_revolving_fund", D("1000000"), 9),
            ("vi_sports_tourism", D("1000000"), 12),
            ("vi_department_of_education", D("500000"), 12),
            ("vi_sports_parks_recreation", D("500000"), 12),
        ]
        empty = distribution.debt_service_status("PR", 2027, None)
        assert empty == distribution.DebtServiceStatus(
            scheduled_to_date=D(0), transferred=D(0), arrears_carried=D(0), shortfall=D(0), held=D(0)
        )
        assert distribution.debt_service_status("VI", 2027, None) is None
        assert distribution.pending_section("PR", on) == "§31(A)-(B)"
        assert distribution.pending_section("VI", on) == ""


class TestParameterRootFromTheEnvironment:
    @pytest.fixture
    def xx_default(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        monkeypatch.setenv(PARAMETERS_ENV, str(build_xx_root(tmp_path / "root")))
        reset_default_tree()
        yield
        monkeypatch.delenv(PARAMETERS_ENV)
        reset_default_tree()

    def test_default_tree_reads_taxcore_parameters(self, xx_default: None) -> None:
        assert known_jurisdictions() == ["PR", "VI", "XX"]
        inp = DeclarationInput(
            jurisdiction="XX", lodging_class="hotel", period="2026-10", room_revenue=D("999.99")
        )
        assert compute_declaration(inp, today=date(2026, 11, 1)).tax == D("100.00")

    def test_unset_is_the_packaged_tree(self) -> None:
        assert default_tree().root == PACKAGE_ROOT
        assert known_jurisdictions() == ["PR", "VI"]
