"""The process that computes remittance schedules' chunks, apart from the API's event loop.

A schedule row's computation (taxcore's recompute, its trace, the row and event it
becomes: :func:`filing.schedules.service._compute`) is pure Python, ~70% of a schedule's
CPU in the API process. In a thread it holds the GIL against the event loop (which parses,
screens and writes the chunks meanwhile, and serves other requests); in a process of its
own it runs beside it. The pool is created when the app starts (:func:`start`: its
processes forked from a forkserver that imported the service once, each given the app's
law once) and shut down when it stops (:func:`stop`).

What crosses to the worker is flat: the rows (pydantic models), each lodging as its
column values, the chunk's lookups; what comes back is what is written (COPY tuples, outbox
rows with their envelopes encoded) and each row's result."""

from __future__ import annotations

import asyncio
import functools
import gc
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any, TypeAlias

from fastapi import FastAPI

from filing.declarations.repository import loaded
from filing.models import Lodging
from filing.schedules.repository import CopyRows
from filing.schedules.schemas import ScheduleRow
from servicekit.outbox import OutboxRow
from taxcore.parameters import ParameterTree

#: ``app.state`` attribute of the pool (absent: chunks are computed in a thread)
STATE = "schedule_workers"
LODGING_COLUMNS: tuple[str, ...] = tuple(c.name for c in Lodging.__table__.columns)

#: the law of this worker process (:func:`_initialise`)
_law: ParameterTree | None = None

Computed: TypeAlias = tuple[CopyRows, list[OutboxRow], dict[int, dict[str, Any]]]


def _initialise(law: ParameterTree) -> None:
    global _law  # noqa: PLW0603 - one law per worker process, set once
    _law = law
    gc.freeze()  # the imported modules and the law: never scanned again by the collector


def _warm() -> None:
    """A first job: the worker is forked and initialised before the first schedule."""


def compute_chunk(candidates: Sequence[tuple[int, ScheduleRow, tuple[Any, ...]]], **kwargs: Any) -> Computed:
    """:func:`filing.schedules.service._compute` in the worker: each lodging rebuilt from its
    column values (``LODGING_COLUMNS``), the worker's law, the results returned."""
    from filing.schedules.service import _compute  # noqa: PLC0415 - the service imports this module

    assert _law is not None, "a worker process initialised with the law"
    results: dict[int, dict[str, Any]] = {}
    rebuilt = [
        (i, row, loaded(Lodging, dict(zip(LODGING_COLUMNS, values, strict=True))))
        for i, row, values in candidates
    ]
    records, events = _compute(rebuilt, tree=_law, results=results, **kwargs)
    return records, events, results


def flat(lodging: Lodging) -> tuple[Any, ...]:
    """A lodging as its column values, for :func:`compute_chunk`."""
    values = lodging.__dict__
    return tuple(values[c] for c in LODGING_COLUMNS)


async def start(app: FastAPI, *, processes: int) -> None:
    """The app's pool of ``processes`` workers (0: none, chunks computed in a thread)."""
    if processes <= 0:
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["filing.schedules.service"])
    pool = ProcessPoolExecutor(
        max_workers=processes, mp_context=context, initializer=_initialise, initargs=(app.state.runtime.law,)
    )
    setattr(app.state, STATE, pool)
    loop = asyncio.get_running_loop()
    await asyncio.gather(*(loop.run_in_executor(pool, _warm) for _ in range(processes)))


async def stop(app: FastAPI) -> None:
    pool: Executor | None = getattr(app.state, STATE, None)
    if pool is not None:
        delattr(app.state, STATE)
        await asyncio.get_running_loop().run_in_executor(None, functools.partial(pool.shutdown, wait=True))


def of(app: FastAPI) -> Executor | None:
    pool: Executor | None = getattr(app.state, STATE, None)
    return pool
