"""The ADR outlier's median of rates its caller keeps sorted (:class:`Ascending`), pure."""

from __future__ import annotations

from decimal import Decimal
from statistics import median

from taxcore.parameters import default_tree
from taxcore.rules.crosscheck import Ascending, LodgingPeriodData, _median, adr_outlier
from taxcore.rules.declaration import DeclarationInput


def rates(*values: str) -> list[Decimal]:
    return [Decimal(v) for v in values]


def test_the_median_by_position_is_statistics_median() -> None:
    odd = rates("90.00", "100.00", "100.00", "130.05", "999.99")
    for values in (rates("100.00"), rates("100.00", "110.01"), odd):
        assert _median(Ascending(values)) == Decimal(median(values))
    assert _median(Ascending(rates("100.00", "110.01"))) == Decimal("105.005")
    assert _median(rates("130.00", "100.00", "110.00")) == Decimal("110.00")  # a plain list is sorted


def data(peers: list[Decimal]) -> LodgingPeriodData:
    inp = DeclarationInput(
        jurisdiction="PR",
        period="2025-07",
        lodging_class="hotel",
        room_revenue=Decimal("10000.00"),
        room_nights=20,
    )
    return LodgingPeriodData(
        jurisdiction="PR", period="2025-07", room_count=40, operator=inp, peer_adrs=peers
    )


def test_ascending_rates_are_kept_as_given_and_a_list_is_validated() -> None:
    given = Ascending(rates("100.00", "110.00", "120.00", "130.00", "140.00"))
    assert data(given).peer_adrs is given
    validated = data(["100.00", "110.00"])  # type: ignore[list-item]
    assert type(validated.peer_adrs) is list
    assert validated.peer_adrs == rates("100.00", "110.00")


def test_the_same_finding_from_ascending_rates_as_from_a_list() -> None:
    tree = default_tree()
    sections = {"adr_outlier": "§2(32), §32"}
    peers = rates("100.00", "110.00", "120.00", "130.00", "140.00")
    shuffled = [peers[3], peers[0], peers[4], peers[1], peers[2]]
    found = adr_outlier(data(Ascending(peers)), tree, sections)
    assert found is not None
    assert found == adr_outlier(data(shuffled), tree, sections)
    assert [found.declared, found.reported, found.difference] == rates("500.00", "120.00", "380.00")
