"""What a deficiency notice says about answering it, from the jurisdiction's own parameters.

Every citation a notice prints comes from the notice's jurisdiction: there is no default
section and no other jurisdiction to fall back to (the loader refuses a tree where a
jurisdiction that issues notices lacks one, see ``taxcore.parameters.REQUIRED_WITH``).

* the term to answer: ``assessment.notice_response_days`` (PR §2(25), §33-§34; VI §54(d));
* paying the undisputed part first: only where ``assessment.partial_dispute_prepay`` is true
  (PR §34), cited by ``assessment.partial_dispute_section``; the Virgin Islands has no such rule
  in our text, so its notice does not state one and a dispute is not refused for it;
* a draw on the bond: only where ``bonds.required`` is true (PR §27, §33), cited by
  ``bonds.draw_section``; the Virgin Islands requires no bond, so its notice never mentions one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from taxcore.errors import ParameterError
from taxcore.parameters import ParameterTree, ParameterValue, default_tree

__all__ = ["NoticeTerms", "notice_terms"]


@dataclass(frozen=True, slots=True)
class NoticeTerms:
    """The answering terms of a notice issued on ``on`` in ``jurisdiction``."""

    jurisdiction: str
    on: date
    response_days: int
    response_section: str
    response_provisional: bool
    #: section requiring the undisputed part be paid before a dispute; None: no such rule
    partial_dispute_section: str | None
    #: section of a draw on the bond for an unpaid deficiency; None: bonds are not required
    bond_draw_section: str | None

    def answer_sentences(self, deadline: date) -> list[str]:
        """The letter's sentences about answering (each cites this jurisdiction only)."""
        sentences = [
            f"You may pay the amount owed, accept this notice, or dispute it by {deadline.isoformat()} "
            f"({self.response_days} days, {self.response_section})."
        ]
        if self.partial_dispute_section is not None:
            sentences.append(
                "To dispute part of it, first pay the part you do not dispute "
                f"({self.partial_dispute_section})."
            )
        sentences.append("Interest keeps accruing on what remains unpaid.")
        if self.bond_draw_section is not None:
            sentences.append(
                "If this notice is neither paid nor disputed by that date, the unpaid deficiency may be "
                f"charged against your bond ({self.bond_draw_section})."
            )
        return sentences


def _flag(tree: ParameterTree, jurisdiction: str, path: str, on: date) -> bool:
    pv = tree.get(jurisdiction, path, on)
    if not isinstance(pv.value, bool):
        raise ParameterError(path, f"{jurisdiction} {path} must be true or false, got {pv.value!r}")
    return pv.value


def _text(pv: ParameterValue) -> str:
    if not isinstance(pv.value, str) or not pv.value.strip():
        raise ParameterError(pv.path, f"{pv.path} must be a citation text, got {pv.value!r}")
    return pv.value


def notice_terms(jurisdiction: str, on: date, *, parameters: ParameterTree | None = None) -> NoticeTerms:
    """The terms in force on ``on`` (strict: ``ParameterError`` outside a parameter's range)."""
    tree = parameters or default_tree()
    days = tree.get(jurisdiction, "assessment.notice_response_days", on)
    if isinstance(days.value, bool) or not isinstance(days.value, Decimal) or days.value != int(days.value):
        raise ParameterError(days.path, f"{days.path} is not a whole number of days: {days.value!r}")
    dispute = (
        _text(tree.get(jurisdiction, "assessment.partial_dispute_section", on))
        if _flag(tree, jurisdiction, "assessment.partial_dispute_prepay", on)
        else None
    )
    bond = (
        _text(tree.get(jurisdiction, "bonds.draw_section", on))
        if _flag(tree, jurisdiction, "bonds.required", on)
        else None
    )
    return NoticeTerms(
        jurisdiction=jurisdiction,
        on=on,
        response_days=int(days.value),
        response_section=days.section,
        response_provisional=days.provisional,
        partial_dispute_section=dispute,
        bond_draw_section=bond,
    )
