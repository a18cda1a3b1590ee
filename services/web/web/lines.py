"""The declaration form, built from taxcore's line definitions, and its preview.

Which money lines a lodging reports comes from the jurisdiction's parameters in force
for the period (``base.lines`` and ``base.excluded_lines``, PR §2(8), §24; VI §54(b)),
in taxcore's order (``LINES``). The preview runs taxcore's own review of the return
(the one the filing service runs on submission) so the person sees the tax, the
findings and the trace before sending; the filing service recomputes it on receipt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from pydantic import ValidationError

from taxcore.errors import TaxcoreError
from taxcore.money import MoneyError
from taxcore.parameters import ParameterTree
from taxcore.periods import Period
from taxcore.rules import check
from taxcore.rules.declaration import LINES, DeclarationInput, DeclarationResult
from web.i18n import N_

#: English labels (msgids of the catalog) of every line taxcore knows.
LABELS: dict[str, str] = {
    "room_revenue": N_("Room revenue"),
    "paid_unused_rooms": N_("Rooms paid for but not used"),
    "room_penalties": N_("Room penalties (no-shows, late cancellations)"),
    "resort_and_other_fees": N_("Resort and other fees"),
    "surcharges_and_service_charges": N_("Surcharges and service charges"),
    "intermediary_retained": N_("Amounts retained by intermediaries"),
    "all_inclusive_global_charges": N_("All-inclusive global charges"),
}


def _names(tree: ParameterTree, jurisdiction: str, path: str, on: date) -> list[str]:
    if not tree.has(jurisdiction, path):
        return []
    value = tree.value(jurisdiction, path, on)
    return [str(v) for v in value] if isinstance(value, list) else []


def form_lines(jurisdiction: str, lodging_class: str, period: Period, *, tree: ParameterTree) -> list[str]:
    """The money lines this lodging declares for ``period``, in taxcore's order."""
    on = period.first_day
    wanted = set(_names(tree, jurisdiction, "base.lines", on)) | set(
        _names(tree, jurisdiction, "base.excluded_lines", on)
    )
    if lodging_class not in _names(tree, jurisdiction, "base.global_charge_classes", on):
        wanted.discard("all_inclusive_global_charges")
    return [line for line in LINES if line in wanted]


@dataclass
class Parsed:
    amounts: dict[str, Decimal]
    room_nights: int
    declared_tax: Decimal | None
    errors: dict[str, str]  # field -> English msgid


def parse_form(form: dict[str, str], lines: list[str]) -> Parsed:
    """Dollars and cents, never negative; blank is zero (the declared tax: not given)."""
    amounts: dict[str, Decimal] = {}
    errors: dict[str, str] = {}
    for name in [*lines, "declared_tax"]:
        raw = (form.get(name) or "").strip().replace(",", "").removeprefix("$")
        if not raw:
            if name != "declared_tax":
                amounts[name] = Decimal(0)
            continue
        try:
            value = Decimal(raw)
        except InvalidOperation:
            errors[name] = N_("Enter an amount in dollars and cents, like 1234.50.")
            continue
        exponent = value.as_tuple().exponent
        if not isinstance(exponent, int) or exponent < -2 or not Decimal(0) <= value < Decimal("1e14"):
            errors[name] = N_("Enter an amount in dollars and cents, like 1234.50.")
            continue
        amounts[name] = value
    nights_raw = (form.get("room_nights") or "0").strip()
    nights = 0
    if not nights_raw.isdigit() or int(nights_raw) > 100_000_000:
        errors["room_nights"] = N_("Enter a whole number of room nights.")
    else:
        nights = int(nights_raw)
    declared = amounts.pop("declared_tax", None)
    return Parsed(amounts=amounts, room_nights=nights, declared_tax=declared, errors=errors)


@dataclass
class Preview:
    result: DeclarationResult | None
    findings: list[check.Finding]
    error: tuple[str, str] | None  # (field, message) from taxcore


def preview(
    *,
    jurisdiction: str,
    lodging_class: str,
    casino: bool,
    period: Period,
    parsed: Parsed,
    today: date,
    tree: ParameterTree,
) -> Preview:
    try:
        inp = DeclarationInput(
            jurisdiction=jurisdiction,
            lodging_class=lodging_class,
            casino=casino,
            period=str(period),
            room_nights=parsed.room_nights,
            **parsed.amounts,
        )
        review = check.review_declaration(
            inp,
            check.DeclaredFigures(taxable_base=None, tax=parsed.declared_tax),
            today=today,
            parameters=tree,
        )
    except (TaxcoreError, MoneyError) as exc:
        return Preview(result=None, findings=[], error=(exc.field, exc.message))
    except ValidationError as exc:
        first = exc.errors()[0]
        return Preview(result=None, findings=[], error=(".".join(map(str, first["loc"])), first["msg"]))
    return Preview(result=review.result, findings=list(review.findings), error=None)
