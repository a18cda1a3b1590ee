"""The parameter loader: format, strict ranges, errors naming file and line."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from taxcore import parameters as P
from taxcore.errors import InvalidInput, ParameterError
from taxcore.parameters import load_tree
from taxcore.rules.declaration import DeclarationInput, compute_declaration

GOOD = """\
description: A rate.
unit: rate
metadata:
  reference:
    section: "§1"
    title: Test Act
  open_ended: true
values:
  2020-01-01:
    value: 0.10
  2024-01-01:
    value: 0.125
    provisional: true
    note: not confirmed
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def refused(root: Path, text: str, line: int | str, message: str) -> None:
    """A file ``XX/r.yaml`` of ``text`` makes the tree refuse to load, naming the file, the
    line and the fault (``message``, a regular expression)."""
    write(root, "XX/r.yaml", text)
    with pytest.raises(ParameterError, match=rf"XX/r.yaml line {line}: {message}"):
        load_tree(root)


class TestFormat:
    def test_folder_tree_is_the_namespace(self, tmp_path: Path) -> None:
        write(tmp_path, "XX/rates/general.yaml", GOOD)
        tree = load_tree(tmp_path)
        assert tree.jurisdictions() == ["XX"]
        assert tree.paths("XX") == ["rates.general"]

    def test_values_are_decimal_from_text(self, tmp_path: Path) -> None:
        write(tmp_path, "XX/rates/general.yaml", GOOD)
        pv = load_tree(tmp_path).get("XX", "rates.general", date(2023, 6, 1))
        assert pv.value == Decimal("0.10")
        assert str(pv.value) == "0.10"  # the YAML text, never a float
        assert pv.effective == date(2020, 1, 1)
        assert (pv.section, pv.title, pv.provisional, pv.note) == ("§1", "Test Act", False, None)

    def test_latest_value_in_force_and_provisional_note(self, tmp_path: Path) -> None:
        write(tmp_path, "XX/rates/general.yaml", GOOD)
        pv = load_tree(tmp_path).get("XX", "rates.general", date(2030, 1, 1))
        assert (pv.value, pv.provisional, pv.note) == (Decimal("0.125"), True, "not confirmed")

    def test_integers_lists_mappings_strings_bools(self, tmp_path: Path) -> None:
        write(
            tmp_path,
            "XX/misc/things.yaml",
            GOOD.replace("value: 0.10", "value: [1, two, {a: 2.50}, true, 2020-02-02]"),
        )
        v = load_tree(tmp_path).value("XX", "misc.things", date(2021, 1, 1))
        assert v == [Decimal(1), "two", {"a": Decimal("2.50")}, True, "2020-02-02"]

    def test_reference_override(self, tmp_path: Path) -> None:
        text = GOOD.replace("    value: 0.10\n", '    value: 0.10\n    reference:\n      section: "§9"\n')
        write(tmp_path, "XX/r.yaml", text)
        pv = load_tree(tmp_path).get("XX", "r", date(2021, 1, 1))
        assert (pv.section, pv.title) == ("§9", "Test Act")

    def test_packaged_tree(self) -> None:
        assert P.jurisdictions() == ["PR", "VI"]
        pv = P.get("PR", "rates.casino", date(2026, 1, 1))
        assert (pv.value, pv.section) == (Decimal("0.11"), "§24(B)")
        assert P.value("VI", "rates.room_tax", date(2026, 1, 1)) == Decimal("0.125")
        assert P.int_value("VI", "periods.due_offset", date(2026, 1, 1)) == 30
        assert P.decimal_value("VI", "impact_fee.per_unit_day", date(2026, 1, 1)) == Decimal(25)

    def test_every_packaged_provisional_value_says_why(self) -> None:
        tree = P.default_tree()
        for jur in tree.jurisdictions():
            for path in tree.paths(jur):
                for entry in tree.parameter(jur, path).entries:
                    assert not entry.provisional or entry.note, (jur, path)


class TestStrictRange:
    def test_before_first_value(self, tmp_path: Path) -> None:
        write(tmp_path, "XX/rates/general.yaml", GOOD)
        with pytest.raises(ParameterError, match="first value is effective 2020-01-01") as e:
            load_tree(tmp_path).get("XX", "rates.general", date(2019, 12, 31))
        assert e.value.field == "rates.general"

    def test_after_last_valid(self, tmp_path: Path) -> None:
        write(tmp_path, "XX/r.yaml", GOOD.replace("open_ended: true", "last_valid: 2025-12-31"))
        tree = load_tree(tmp_path)
        assert tree.value("XX", "r", date(2025, 12, 31)) == Decimal("0.125")
        with pytest.raises(ParameterError, match="last valid date is 2025-12-31") as e:
            tree.get("XX", "r", date(2026, 1, 1))
        assert e.value.field == "r"

    def test_repealed_by_null(self, tmp_path: Path) -> None:
        write(tmp_path, "XX/r.yaml", GOOD + "  2026-01-01:\n    value: null\n")
        tree = load_tree(tmp_path)
        assert tree.value("XX", "r", date(2025, 12, 31)) == Decimal("0.125")
        with pytest.raises(ParameterError, match="repealed from 2026-01-01"):
            tree.get("XX", "r", date(2026, 1, 1))

    def test_packaged_date_before_parameters(self) -> None:
        with pytest.raises(ParameterError) as e:
            P.get("VI", "rates.room_tax", date(2017, 9, 30))
        assert e.value.field == "rates.room_tax"

    def test_unknown_path_and_jurisdiction(self) -> None:
        with pytest.raises(ParameterError) as e:
            P.get("PR", "rates.nope", date(2026, 1, 1))
        assert e.value.field == "rates.nope"
        with pytest.raises(InvalidInput) as e2:
            P.get("ZZ", "rates.general", date(2026, 1, 1))
        assert e2.value.field == "jurisdiction"

    def test_must_say_last_valid_or_open_ended(self, tmp_path: Path) -> None:
        refused(tmp_path, GOOD.replace("  open_ended: true\n", ""), 4, r".*exactly one of")
        both = GOOD.replace("open_ended: true", "open_ended: true\n  last_valid: 2030-01-01")
        write(tmp_path, "XX/r.yaml", both)
        with pytest.raises(ParameterError, match="exactly one of"):
            load_tree(tmp_path)


class TestErrorsNameFileAndLine:
    def test_duplicate_key(self, tmp_path: Path) -> None:
        write(tmp_path, "XX/rates/general.yaml", GOOD + "  2020-01-01:\n    value: 0.2\n")
        with pytest.raises(ParameterError) as e:
            load_tree(tmp_path)
        assert "XX/rates/general.yaml line 15" in str(e.value)
        assert "duplicate key '2020-01-01' (first at line 9)" in str(e.value)
        assert e.value.field == "rates.general"

    def test_duplicate_field(self, tmp_path: Path) -> None:
        refused(
            tmp_path, GOOD.replace("unit: rate\n", "unit: rate\nunit: share\n"), 3, r"duplicate key 'unit'"
        )

    def test_malformed_date(self, tmp_path: Path) -> None:
        refused(tmp_path, GOOD.replace("2024-01-01:", "2024-13-01:"), 11, r"malformed date '2024-13-01'")

    def test_malformed_date_format(self, tmp_path: Path) -> None:
        refused(tmp_path, GOOD.replace("2024-01-01:", "2024/01/01:"), 11, r"malformed date in values")

    def test_short_date(self, tmp_path: Path) -> None:
        refused(
            tmp_path, GOOD.replace("2024-01-01:", "2024-1-1:"), 11, r"malformed date in values: '2024-1-1'"
        )

    def test_unknown_top_field(self, tmp_path: Path) -> None:
        refused(tmp_path, GOOD + "colour: blue\n", 15, r"unknown field 'colour'")

    def test_unknown_value_field(self, tmp_path: Path) -> None:
        refused(
            tmp_path,
            GOOD.replace("    value: 0.10\n", "    value: 0.10\n    cap: 1\n"),
            11,
            r"unknown field 'cap'",
        )

    def test_unknown_metadata_field(self, tmp_path: Path) -> None:
        refused(
            tmp_path,
            GOOD.replace("  open_ended: true", "  open_ended: true\n  owner: me"),
            8,
            r"unknown field 'owner'",
        )

    def test_provisional_without_note(self, tmp_path: Path) -> None:
        refused(tmp_path, GOOD.replace("    note: not confirmed\n", ""), 12, r"a provisional value must")

    def test_missing_reference(self, tmp_path: Path) -> None:
        text = GOOD.replace('  reference:\n    section: "§1"\n    title: Test Act\n', "")
        refused(tmp_path, text, 4, r"metadata.reference")

    def test_invalid_yaml(self, tmp_path: Path) -> None:
        refused(tmp_path, GOOD + "  bad: [\n", r"\d+", r"invalid YAML")

    def test_non_finite_number(self, tmp_path: Path) -> None:
        refused(tmp_path, GOOD.replace("value: 0.10", "value: .inf"), 10, r"malformed number '.inf'")


def _copy_packaged(dst: Path) -> None:
    for src in P.PACKAGE_ROOT.rglob("*.yaml"):
        target = dst / src.relative_to(P.PACKAGE_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")


class TestFutureRateIsAYamlEdit:
    """Changing a rate from a future date needs a YAML edit, not a code change."""

    def test_new_general_rate_from_2030(self, tmp_path: Path) -> None:
        _copy_packaged(tmp_path)
        general = tmp_path / "PR" / "rates" / "general.yaml"
        general.write_text(
            general.read_text(encoding="utf-8")
            + "  2030-07-01:\n    value: 0.10\n    note: hypothetical amendment\n",
            encoding="utf-8",
        )
        tree = load_tree(tmp_path)
        inp = {"jurisdiction": "PR", "lodging_class": "hotel", "room_revenue": "1000.00"}
        before = DeclarationInput(period="2030-06", room_nights=10, **inp)
        after = DeclarationInput(period="2030-07", room_nights=10, **inp)
        assert compute_declaration(before, parameters=tree).tax == Decimal("90.00")
        result = compute_declaration(after, parameters=tree)
        assert (result.rate, result.tax) == (Decimal("0.10"), Decimal("100.00"))
        rate_step = next(s for s in result.trace.steps if s.rule == "rate")
        assert rate_step.parameters["rates.general"] == Decimal("0.10")
        # the packaged tree is untouched
        assert compute_declaration(after).tax == Decimal("90.00")

    def test_sunset_makes_later_periods_an_error(self, tmp_path: Path) -> None:
        _copy_packaged(tmp_path)
        room_tax = tmp_path / "VI" / "rates" / "room_tax.yaml"
        room_tax.write_text(
            room_tax.read_text(encoding="utf-8").replace("open_ended: true", "last_valid: 2030-12-31"),
            encoding="utf-8",
        )
        tree = load_tree(tmp_path)
        inp = DeclarationInput(
            jurisdiction="VI", lodging_class="hotel", period="2031-01", room_revenue=Decimal(1)
        )
        with pytest.raises(ParameterError) as e:
            compute_declaration(inp, parameters=tree)
        assert e.value.field == "rates.room_tax"


def test_readme_lists_every_provisional_reading() -> None:
    """Each provisional parameter (outside the balance/distribution namespaces) is on the rules page."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    tree = P.default_tree()
    missing = [
        (jur, path)
        for jur in tree.jurisdictions()
        for path in tree.paths(jur)
        if not path.startswith(("penalties.", "payments.", "distribution."))
        and any(e.provisional for e in tree.parameter(jur, path).entries)
        and f"`{path}`" not in readme
    ]
    assert missing == []
