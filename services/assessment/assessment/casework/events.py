"""Event ids of case work (no imports of the use-cases: every domain uses them)."""

from __future__ import annotations

import uuid

EVENT_NAMESPACE = uuid.UUID("3d0c8f5e-7a51-4f7e-a7f3-6c2b9e1d4a20")


def event_id(*parts: str) -> str:
    """The id of the event describing a row: a retried write or a replay publishes nothing new."""
    return str(uuid.uuid5(EVENT_NAMESPACE, "|".join(parts)))
