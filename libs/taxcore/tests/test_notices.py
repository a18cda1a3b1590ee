"""Notice text comes only from the notice's own jurisdiction (issue 10 item 5)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from taxcore.errors import ParameterError
from taxcore.notices import notice_terms
from taxcore.parameters import load_tree
from taxcore.testing import tree_with_jurisdiction

ON = date(2025, 3, 1)
DEADLINE = date(2025, 3, 31)


def test_pr_states_the_partial_dispute_rule_and_the_bond() -> None:
    terms = notice_terms("PR", ON)
    assert (terms.response_days, terms.partial_dispute_section, terms.bond_draw_section) == (30, "§34", "§33")
    assert terms.answer_sentences(DEADLINE) == [
        "You may pay the amount owed, accept this notice, or dispute it by 2025-03-31 "
        "(30 days, §2(25); §33; §34).",
        "To dispute part of it, first pay the part you do not dispute (§34).",
        "Interest keeps accruing on what remains unpaid.",
        "If this notice is neither paid nor disputed by that date, the unpaid deficiency may be "
        "charged against your bond (§33).",
    ]


def test_vi_cites_only_its_own_law_and_never_a_bond() -> None:
    terms = notice_terms("VI", ON)
    assert (terms.partial_dispute_section, terms.bond_draw_section) == (None, None)
    assert terms.answer_sentences(DEADLINE) == [
        "You may pay the amount owed, accept this notice, or dispute it by 2025-03-31 "
        "(30 days, §54(d) (33 V.I.C. § 45)).",
        "Interest keeps accruing on what remains unpaid.",
    ]
    text = " ".join(terms.answer_sentences(DEADLINE))
    assert "PR" not in text
    assert "bond" not in text


def test_a_citation_naming_another_jurisdiction_is_a_load_error(tmp_path: Path) -> None:
    root = tree_with_jurisdiction(tmp_path / "root", "XX", like="VI")
    (root / "XX/assessment/partial_dispute_section.yaml").write_text(
        'description: d\nunit: text\nmetadata:\n  reference:\n    section: "§34"\n    title: t\n'
        '  open_ended: true\nvalues:\n  2017-10-01:\n    value: "PR §34"\n',
        encoding="utf-8",
    )
    with pytest.raises(ParameterError, match=r"XX assessment.partial_dispute_section cites PR law"):
        load_tree(root)


def test_a_section_naming_another_jurisdiction_is_a_load_error(tmp_path: Path) -> None:
    root = tree_with_jurisdiction(
        tmp_path / "root",
        "XX",
        like="VI",
        edits={"assessment/refund_years_from_payment.yaml": ("§54 (no refund term stated)", "§42 (PR rule)")},
    )
    with pytest.raises(ParameterError, match=r"cites PR law \('§42 \(PR rule\)'\)"):
        load_tree(root)


def test_a_required_bond_without_its_draw_citation_is_a_load_error(tmp_path: Path) -> None:
    root = tree_with_jurisdiction(
        tmp_path / "root", "XX", like="VI", edits={"bonds/required.yaml": ("value: false", "value: true")}
    )
    with pytest.raises(ParameterError, match=r"XX bonds.required is true, so XX needs bonds.draw_section"):
        load_tree(root)


def test_the_partial_dispute_rule_without_its_citation_is_a_load_error(tmp_path: Path) -> None:
    root = tree_with_jurisdiction(tmp_path / "root", "XX", like="PR")
    (root / "XX/assessment/partial_dispute_section.yaml").unlink()
    with pytest.raises(ParameterError, match=r"XX assessment.partial_dispute_prepay is true"):
        load_tree(root)


def test_a_notice_jurisdiction_without_its_response_term_is_a_load_error(tmp_path: Path) -> None:
    root = tree_with_jurisdiction(tmp_path / "root", "XX", like="VI")
    (root / "XX/assessment/notice_response_days.yaml").unlink()
    with pytest.raises(ParameterError, match=r"XX has assessment.notice_section and so needs"):
        load_tree(root)


def test_a_jurisdiction_taking_payments_without_its_agency_statute_is_a_load_error(tmp_path: Path) -> None:
    root = tree_with_jurisdiction(tmp_path / "root", "XX", like="VI")
    (root / "XX/agency/statute.yaml").unlink()
    with pytest.raises(
        ParameterError, match=r"XX has payments.application_order and so needs agency.statute"
    ):
        load_tree(root)
