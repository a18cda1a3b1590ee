"""Jurisdictions and their lodging classes, read from parameters (``lodging.classes``).

A third jurisdiction is a new ``parameters/<CODE>/`` folder: its classes, rates and
periods are data.
"""

from __future__ import annotations

from datetime import date

from taxcore.errors import InvalidInput, ParameterError
from taxcore.parameters import ParameterTree, default_tree

__all__ = ["known_jurisdictions", "lodging_classes", "require_jurisdiction"]


def known_jurisdictions(*, parameters: ParameterTree | None = None) -> list[str]:
    """Codes of every jurisdiction that has parameters, e.g. ``['PR', 'VI']``."""
    codes: list[str] = (parameters or default_tree()).jurisdictions()
    return codes


def require_jurisdiction(jurisdiction: str, *, parameters: ParameterTree | None = None) -> str:
    """Return ``jurisdiction`` if known, else raise ``InvalidInput(field="jurisdiction")``."""
    known = known_jurisdictions(parameters=parameters)
    if jurisdiction not in known:
        raise InvalidInput(
            "jurisdiction", f"unknown jurisdiction {jurisdiction!r}; known: {', '.join(known)}"
        )
    return jurisdiction


def lodging_classes(
    jurisdiction: str, on: date, *, parameters: ParameterTree | None = None
) -> frozenset[str]:
    """Lodging class identifiers in force in ``jurisdiction`` on ``on``.

    PR (§2, §24(B)): hotel, condohotel, apartment_hotel, all_inclusive_hotel, hostelry,
    guesthouse, inn, motel, short_term_rental, government_recreational_facility.
    VI (§54(a)): hotel, apartment_condominium_residence, timeshare.
    """
    tree = parameters or default_tree()
    key = ("lodging_classes", jurisdiction, on)
    cached: frozenset[str] | None = tree.memo.get(key)
    if cached is not None:
        return cached
    require_jurisdiction(jurisdiction, parameters=tree)
    raw = tree.value(jurisdiction, "lodging.classes", on)
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise ParameterError("lodging.classes", f"{jurisdiction}: must be a list of identifiers")
    result = frozenset(str(c) for c in raw)
    tree.memo[key] = result
    return result
