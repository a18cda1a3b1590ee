"""The law and the clock a process runs with, passed in rather than read from globals.

A :class:`Runtime` is built once per process at its start (the API's ``create_app``, the
worker's ``run_workers``) from the environment: ``TAXCORE_PARAMETERS`` selects the
parameter tree there and nowhere else. It is held on ``app.state.runtime`` and on each
:class:`~servicekit.consumer.EventConsumer`; endpoints take it as :data:`RuntimeDep`, event
handlers as their fourth argument, background jobs as theirs, and they pass its ``law`` and
``clock.today()`` on as arguments, so a function's signature shows which law and which day
produced its result. Tests build one with :class:`PinnedClock` (and another tree).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Annotated, Protocol

from fastapi import Depends, Request

from taxcore.parameters import ParameterTree, default_tree


class Clock(Protocol):
    """Where "today" (the day whose law applies) and "now" (a timestamp) come from."""

    def today(self) -> date: ...

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class SystemClock:
    """The machine's clock: the local date, the current UTC instant."""

    def today(self) -> date:
        return date.today()

    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class PinnedClock:
    """A clock whose day is ``day`` (tests, a re-run as of a past day). ``now`` is ``at`` when
    given, else the real instant: timestamps (retries, rotations) keep moving. A test moves
    the day by setting ``day`` (``monkeypatch.setattr(clock, "day", ...)``)."""

    day: date
    at: datetime | None = None

    def today(self) -> date:
        return self.day

    def now(self) -> datetime:
        return self.at if self.at is not None else datetime.now(UTC)


#: the environment variable that pins every process's "today" (unset: the machine's clock)
TODAY_VARIABLE = "ROOMTAX_TODAY"


def clock_from_environment(environ: Mapping[str, str] | None = None) -> Clock:
    """A :class:`PinnedClock` on ``ROOMTAX_TODAY`` when it is set, else the :class:`SystemClock`.
    A value that is not an ISO date stops the process at start, naming the variable."""
    value = (os.environ if environ is None else environ).get(TODAY_VARIABLE, "").strip()
    if not value:
        return SystemClock()
    try:
        return PinnedClock(day=date.fromisoformat(value))
    except ValueError:
        raise ValueError(f"{TODAY_VARIABLE}={value!r} is not a date (YYYY-MM-DD)") from None


@dataclass(frozen=True)
class Runtime:
    """The parameter tree (``law``) and the :class:`Clock` of one process."""

    law: ParameterTree
    clock: Clock = field(default_factory=SystemClock)

    @classmethod
    def from_environment(cls) -> Runtime:
        """The packaged tree, or the one ``TAXCORE_PARAMETERS`` names; the system clock, or a
        :class:`PinnedClock` on the day ``ROOMTAX_TODAY`` names (ISO ``YYYY-MM-DD``: a re-run
        as of a past day, or a multi-process test whose processes must agree on "today" even
        when it runs across midnight)."""
        return cls(law=default_tree(), clock=clock_from_environment())

    def today(self) -> date:
        return self.clock.today()

    def now(self) -> datetime:
        return self.clock.now()


def runtime_of(request: Request) -> Runtime:
    """The app's runtime (``app.state.runtime``, set by ``create_app``)."""
    runtime: Runtime = request.app.state.runtime
    return runtime


async def _runtime(request: Request) -> Runtime:
    """:func:`runtime_of` as a dependency (``async def``: a plain ``def`` dependency costs a
    threadpool hop on every request)."""
    return runtime_of(request)


RuntimeDep = Annotated[Runtime, Depends(_runtime)]

__all__ = ["Clock", "PinnedClock", "Runtime", "RuntimeDep", "SystemClock", "runtime_of"]
