"""outbox traceparent: the trace context of each event (servicekit.telemetry)

Revision ID: 0006_traceparent
Revises: 0005_people
Create Date: 2026-12-02 09:00:00
"""

from collections.abc import Sequence

from servicekit.migrations import add_outbox_traceparent, drop_outbox_traceparent

revision: str = "0006_traceparent"
down_revision: str | None = "0005_people"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    add_outbox_traceparent()


def downgrade() -> None:
    drop_outbox_traceparent()
