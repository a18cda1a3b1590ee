"""Pydantic models read from stored rows: the one mapping of a row to its event or API model.

A contract or response model (of any service) names most of its fields as the row's columns;
:func:`from_row` reads those, and the caller gives only what differs (a renamed id, a field of
another row, a derived status), so each mapping says only that.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def from_row(model: type[M], row: object, **values: object) -> M:
    """``model`` with each field read from the row attribute of that name, unless ``values``
    gives it; validated as any input (a missing required field is an error, not a default)."""
    names = [n for n in model.model_fields if n not in values and hasattr(row, n)]
    return model.model_validate({**{n: getattr(row, n) for n in names}, **values})
