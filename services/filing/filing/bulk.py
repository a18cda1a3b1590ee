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
import gc
from collections.abc import Iterator

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
