"""Jurisdictions and what services ask about them, read from parameters.

A third jurisdiction is a new ``parameters/<CODE>/`` folder: its classes, rates,
periods, agency, bond rule and exemption certificates are data. Services validate
codes with :data:`JurisdictionCode` and ask these functions, never a table of codes.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

from taxcore.errors import InvalidInput, ParameterError
from taxcore.parameters import ParameterTree, default_tree

__all__ = [
    "JurisdictionCode",
    "certificate_kinds",
    "has_casino_rate",
    "known_jurisdictions",
    "lodging_classes",
    "require_jurisdiction",
]


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


def _known(code: str) -> str:
    known = known_jurisdictions()
    if code not in known:
        raise ValueError(f"unknown jurisdiction {code!r}; known: {', '.join(known)}")
    return code


#: A jurisdiction code that has parameters in :func:`~taxcore.parameters.default_tree` (pydantic
#: type: an unknown code fails validation on its field, a 422 pointing at it in the services).
JurisdictionCode = Annotated[str, StringConstraints(max_length=10), AfterValidator(_known)]


def has_casino_rate(jurisdiction: str, *, parameters: ParameterTree | None = None) -> bool:
    """Whether a casino licence changes the rate in ``jurisdiction`` (it has ``rates.casino``, PR §24(B))."""
    tree = parameters or default_tree()
    require_jurisdiction(jurisdiction, parameters=tree)
    return tree.has(jurisdiction, "rates.casino")


def certificate_kinds(
    jurisdiction: str, on: date, *, parameters: ParameterTree | None = None
) -> frozenset[str]:
    """Exemption certificates the agency of ``jurisdiction`` issues: the exemptions in force on
    ``on`` whose ``evidence_required`` is true (PR: ``pr_film_production``, §24(F); VI: none)."""
    tree = parameters or default_tree()
    require_jurisdiction(jurisdiction, parameters=tree)
    kinds: set[str] = set()
    for path in tree.paths(jurisdiction):
        if path.startswith("exemptions."):
            try:
                spec = tree.value(jurisdiction, path, on)
            except ParameterError:  # not in force on that day
                continue
            if isinstance(spec, dict) and spec.get("evidence_required") is True:
                kinds.add(path.removeprefix("exemptions."))
    return frozenset(kinds)


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
