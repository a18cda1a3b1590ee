"""The service's notion of today (one place, so a deployment or a test can pin it)."""

from __future__ import annotations

from datetime import date


def today() -> date:
    return date.today()
