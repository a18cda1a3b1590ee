"""a declaration's schedule is checked at commit: a schedule's declarations are written in
chunks before the schedule row that carries their per-row results (issue 12: a 50,000-row
schedule in bounded memory)

Revision ID: 0008_deferred_schedule_fk
Revises: 0007_session_revocations
Create Date: 2026-12-02 16:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008_deferred_schedule_fk"
down_revision: str | None = "0007_session_revocations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FK = "fk_declarations_schedule_id_remittance_schedules"


def upgrade() -> None:
    op.execute(f"ALTER TABLE declarations ALTER CONSTRAINT {FK} DEFERRABLE INITIALLY DEFERRED")


def downgrade() -> None:
    op.execute(f"ALTER TABLE declarations ALTER CONSTRAINT {FK} NOT DEFERRABLE")
