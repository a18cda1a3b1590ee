"""Cursor pagination.

A cursor is an opaque URL-safe token holding the sort key of the last item
returned. Lists are ordered by a unique key (e.g. ``(created_at, id)``) and the
next page starts strictly after it, so pages stay stable while rows are added.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Query
from pydantic import BaseModel

from servicekit.errors import ValidationFailed

T = TypeVar("T")
R = TypeVar("R")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = None


def encode_cursor(values: Sequence[Any]) -> str:
    raw = json.dumps([str(v) for v in values], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _not_a_cursor() -> ValidationFailed:
    return ValidationFailed.on("cursor", "not a cursor returned by this list", root="query")


def decode_cursor(cursor: str | None, *, arity: int) -> list[str] | None:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(values, list) or len(values) != arity:
            raise ValueError("wrong shape")
        return [str(v) for v in values]
    except (ValueError, TypeError) as exc:
        raise _not_a_cursor() from exc


def decode_int_cursor(cursor: str | None) -> int | None:
    """The whole number a cursor of a list ordered by one (a ``seq``, an id) holds; None: the first page."""
    after = decode_cursor(cursor, arity=1)
    if after is None:
        return None
    if not (after[0].isascii() and after[0].isdigit()):
        raise _not_a_cursor()
    return int(after[0])


LimitQuery = Annotated[int, Query(ge=1, le=500, description="page size")]
CursorQuery = Annotated[str | None, Query(description="next_cursor of the previous page")]


def paginate(
    rows: Sequence[R], *, limit: int, key: Callable[[R], Sequence[Any]], to_item: Callable[[R], T]
) -> Page[T]:
    """Build a page from ``limit + 1`` fetched rows."""
    has_more = len(rows) > limit
    kept = list(rows[:limit])
    next_cursor = encode_cursor(key(kept[-1])) if has_more and kept else None
    return Page[T](items=[to_item(r) for r in kept], next_cursor=next_cursor)
