"""The chart of accounts, as data: funds come from taxcore's ``distribution.funds`` parameter.

Which collected components go through the statutory distribution is read from
taxcore's parameters too (our reading of the statutes):

- The *principal* components of a jurisdiction (``payments.principal_sections``:
  PR ``tax``; VI ``tax`` and ``impact_fee``) are what the distribution rules
  distribute. PR §31 distributes "all funds collected from the Tax imposed under
  Section 24"; 33 V.I.C. §54(e)(1) deposits "the funds collected under
  subsection (b)(1)" (the room tax) and §54(b)(3)(D) allocates the impact fee
  15/85 (the Tourism Advertising Revolving Fund's 15% split among the four
  §54(e)(2) earmark funds: each is a fund of the parameter, so an account here).
- Accessory receipts (``penalty``, ``interest``, ``fine``: PR §33, §46-§48;
  VI §54(i), (l); and a ``returned_payment_fee`` charged on a returned payment, a
  case-work charge) are not the Tax of §24 nor the (b)(1) or (b)(3) revenue, and
  neither statute names their destination: a run moves them to the
  jurisdiction's *other receipts* account (``other:PR``), never into a fund.
- Anything else (a component a jurisdiction does not levy, e.g. an impact fee
  posted for PR) has no statutory destination: a run moves it to *suspense*
  for the agency to correct with a reversing entry.

The citations shown on the other-receipts account and on a booked collection are
parameters too (``distribution.accessory_receipts_section``,
``distribution.collection_section``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal

from taxcore.errors import TaxcoreError
from taxcore.parameters import ParameterTree
from taxcore.rules.distribution import funds

ACCESSORY = frozenset({"penalty", "interest", "fine", "returned_payment_fee"})
Destination = Literal["statutory", "other", "suspense"]


def section_text(jurisdiction: str, path: str, on: date, *, law: ParameterTree) -> str | None:
    """The citation text of parameter ``path`` in force on ``on``, or None if there is none."""
    try:
        return str(law.value(jurisdiction, path, on))
    except TaxcoreError:
        return None


@dataclass(frozen=True, slots=True)
class AccountSpec:
    code: str
    jurisdiction: str
    kind: str
    name: str
    section: str | None = None


def cash(jurisdiction: str) -> AccountSpec:
    return AccountSpec(f"cash:{jurisdiction}", jurisdiction, "cash", f"Cash collected ({jurisdiction})")


def pending(jurisdiction: str) -> AccountSpec:
    return AccountSpec(
        f"pending:{jurisdiction}",
        jurisdiction,
        "pending",
        f"Collections pending distribution ({jurisdiction})",
    )


def other(jurisdiction: str, on: date, *, law: ParameterTree) -> AccountSpec:
    return AccountSpec(
        f"other:{jurisdiction}",
        jurisdiction,
        "other",
        f"Penalties, interest and fines collected ({jurisdiction}; not distributed by the statute)",
        section_text(jurisdiction, "distribution.accessory_receipts_section", on, law=law),
    )


def suspense(jurisdiction: str) -> AccountSpec:
    return AccountSpec(
        f"suspense:{jurisdiction}",
        jurisdiction,
        "suspense",
        f"Suspense: collections with no statutory destination ({jurisdiction})",
    )


def fund_accounts(jurisdiction: str, on: date, *, law: ParameterTree) -> list[AccountSpec]:
    """One account per fund of ``jurisdiction`` in force on ``on`` (taxcore parameters)."""
    return [
        AccountSpec(f"fund:{f.code}", jurisdiction, "fund", f.name, f.section)
        for f in funds(jurisdiction, on, law)
    ]


def fund_account_code(fund: str) -> str:
    return f"fund:{fund}"


def destination(jurisdiction: str, component: str, on: date, *, law: ParameterTree) -> Destination:
    """Where a collected component goes at distribution (see the module docstring)."""
    try:
        principal = law.value(jurisdiction, "payments.principal_sections", on)
    except TaxcoreError:
        return "suspense"
    if isinstance(principal, dict) and component in principal:
        return "statutory"
    if component in ACCESSORY:
        return "other"
    return "suspense"
