"""Statutory constants the assessment service applies that taxcore has no parameter for.

Each value names its section. Those our transcriptions do not contain (the PR
text ends inside §31; 33 V.I.C. § 45 and the Virgin Islands refund rules are
not in our files) are marked provisional with the reason, like taxcore's
parameters. They are here, not in taxcore, because taxcore's parameter tree is
owned by another team; moving them into ``taxcore/parameters`` is the intended
next step (see the service README).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Cited:
    value: int
    section: str
    provisional: bool = False
    note: str = ""


#: Days a taxpayer has to answer a Notification of Deficiency before it becomes final.
NOTICE_RESPONSE_DAYS: dict[str, Cited] = {
    "PR": Cited(
        30,
        "§2(25); §33; §34",
        provisional=True,
        note="§33-§34 are past the end of our text; 30 days is the usual term of a PR "
        "administrative deficiency notice. Confirm against the official §34.",
    ),
    "VI": Cited(
        30,
        "§54(d) (33 V.I.C. § 45)",
        provisional=True,
        note="33 V.I.C. § 45 is not in our files; the PR term is used.",
    ),
}

#: PR §42: refunds of overpayments, in years, counted from the declaration when the payment was
#: made with it, otherwise from the payment.
REFUND_YEARS_FROM_DECLARATION: dict[str, Cited] = {
    "PR": Cited(4, "§42", provisional=True, note="§42 is past the end of our text (design summary)."),
    "VI": Cited(
        4,
        "§42 (PR rule applied)",
        provisional=True,
        note="No Virgin Islands refund term is in our files; the PR §42 term is used.",
    ),
}
REFUND_YEARS_FROM_PAYMENT: dict[str, Cited] = {
    "PR": Cited(3, "§42", provisional=True, note="§42 is past the end of our text (design summary)."),
    "VI": Cited(
        3,
        "§42 (PR rule applied)",
        provisional=True,
        note="No Virgin Islands refund term is in our files; the PR §42 term is used.",
    ),
}

#: Where the assessment without a hearing of a clerical error, and an estimated assessment, come from.
CLERICAL_ASSESSMENT_SECTION = {"PR": "§32; §2(18)", "VI": "§54(d)"}
ESTIMATE_SECTION = {"PR": "§32", "VI": "§54(d) (33 V.I.C. § 45)"}
NOTICE_SECTION = {"PR": "§2(25); §33", "VI": "§54(d)"}
BOND_DRAW_SECTION = "§33"

#: Finding codes of taxcore's declaration check that are mathematical or clerical errors
#: (PR §2(18)(i)-(iv)) and so support an assessment without a hearing (PR §32).
CLERICAL_CODES = frozenset(
    {"arithmetic", "inconsistent_entries", "omission", "deduction_beyond_limit", "tax_understated"}
)


def cited(table: dict[str, Cited], jurisdiction: str) -> Cited:
    return table.get(jurisdiction) or table["PR"]
