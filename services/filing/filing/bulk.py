"""Bulk use-cases (a 10,000-row remittance schedule) without the garbage collector's tax.

Such a request allocates tens of thousands of long-lived objects (rows, taxcore
results and traces, ORM entities, JSON documents). With the cyclic collector
running, every young-generation collection rescans them and the request takes
two to three times as long. Reference counting still frees everything that is
not cyclic; the collector is paused only while at least one bulk use-case runs
and resumes (if it was on) when the last one ends.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_depth = 0
_was_enabled = True


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    global _depth, _was_enabled
    if _depth == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _was_enabled:
            gc.enable()


def pausing_collection(use_case: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """A bulk use-case run with the collector paused (:func:`collection_paused`)."""

    @functools.wraps(use_case)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        with collection_paused():
            return await use_case(*args, **kwargs)

    return run
