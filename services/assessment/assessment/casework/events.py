"""Event ids of case work, and events read from their rows (no imports of the use-cases:
every domain uses them)."""

from __future__ import annotations

import uuid
from typing import TypeVar

from pydantic import BaseModel

E = TypeVar("E", bound=BaseModel)

EVENT_NAMESPACE = uuid.UUID("3d0c8f5e-7a51-4f7e-a7f3-6c2b9e1d4a20")


def event_id(*parts: str) -> str:
    """The id of the event describing a row: a retried write or a replay publishes nothing new."""
    return str(uuid.uuid5(EVENT_NAMESPACE, "|".join(parts)))


def from_row(contract: type[E], row: object, **values: object) -> E:
    """The event describing a stored row: each of the contract's fields read from the row
    attribute of that name, unless ``values`` gives it (a renamed id, a field of another row)."""
    names = [n for n in contract.model_fields if n not in values and hasattr(row, n)]
    return contract.model_validate({**{n: getattr(row, n) for n in names}, **values})
