"""People shown by name: the ids the services record (``user:<id>``, ``person:<id>`` or a bare
user id) looked up at the registry's ``/v1/people/names`` with the signed-in person's token, in
one call per request, the id kept beside the name (the page shows it as the name's title).

A machine client (``client:<id>``, or a bare id the registry does not know: some services
write a client's id bare) is shown as it is. A ``user:``/``person:`` id the registry does
not know is shown as an unknown person with the id; a role that may not read names (the registry
answers 403: a dashboard, a taxpayer) sees the ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Request

from web.backend import ApiError
from web.core import Api

PREFIXES = ("user:", "person:")
#: a page names at most this many people (a timeline of a busy account); the rest show ids
MAX_LOOKUPS = 50


@dataclass(frozen=True)
class Named:
    ref: str  # as the service wrote it
    user_id: str | None  # None: not a person (a client)
    name: str | None  # None: not looked up, or unknown
    unknown: bool = False


def user_id_of(ref: str) -> str | None:
    for prefix in PREFIXES:
        if ref.startswith(prefix):
            return ref.removeprefix(prefix) or None
    return None if ":" in ref else ref or None


def refs_in(data: Any) -> set[str]:
    """Every value of a ``by`` or ``…_by`` key anywhere in the services' answers."""
    found: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if (key == "by" or key.endswith("_by")) and isinstance(value, str) and value:
                found.add(value)
            else:
                found |= refs_in(value)
    elif isinstance(data, list | tuple):
        for value in data:
            found |= refs_in(value)
    return found


async def _names(api: Api, user_ids: list[str]) -> dict[str, str]:
    """The names of the people the registry knows among ``user_ids``, in one call."""
    if not user_ids:
        return {}
    found = await api.get("registry", "/v1/people/names", params={"user_id": user_ids})
    return {str(p["id"]): str(p["name"]) for p in found}


async def resolve(request: Request, api: Api, *data: Any) -> dict[str, Named]:
    """Look up the people ``data`` mentions; kept on the request for the templates' ``who()``."""
    known: dict[str, Named] = getattr(request.state, "people", None) or {}
    refs = sorted(r for d in data for r in refs_in(d) if r not in known)
    looked: dict[str, Named] = {n.user_id: n for n in known.values() if n.user_id}
    wanted = sorted({u for r in refs if (u := user_id_of(r)) is not None and u not in looked})
    wanted = wanted[:MAX_LOOKUPS]
    try:
        names = await _names(api, wanted)
    except ApiError as exc:
        if exc.status != 403:
            raise
        wanted = []  # this role does not read people (a dashboard, a taxpayer): the ids are shown
    for looked_up in wanted:
        name = names.get(looked_up)
        looked[looked_up] = Named(looked_up, looked_up, name, unknown=name is None)
    for ref in refs:
        user = user_id_of(ref)
        person = looked.get(user) if user is not None else None
        # a bare id the registry does not know may be a client's (a notice's ``issued_by``): as it is
        unknown = bool(person and person.unknown and ref.startswith(PREFIXES))
        known[ref] = Named(ref, user, person.name if person else None, unknown)
    request.state.people = known
    return known
