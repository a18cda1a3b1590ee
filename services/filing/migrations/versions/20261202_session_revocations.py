"""session revocations: revoked_principals also holds ended sign-in sessions (servicekit.revocations)

Revision ID: session_revocations
Revises: 0006_traceparent
Create Date: 2026-12-02 09:00:00
"""

from collections.abc import Sequence

from servicekit.revocations import allow_session_revocations, disallow_session_revocations

revision: str = "session_revocations"
down_revision: str | None = "0006_traceparent"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    allow_session_revocations()


def downgrade() -> None:
    disallow_session_revocations()
