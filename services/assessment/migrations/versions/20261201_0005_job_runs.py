"""job runs: the daily jobs run once per scheduled day across replicas (servicekit.schedule)

Revision ID: 0005_job_runs
Revises: 0004_revoked_principals
Create Date: 2026-12-01 09:40:00
"""

from collections.abc import Sequence

from servicekit.schedule import create_job_runs_table, drop_job_runs_table

revision: str = "0005_job_runs"
down_revision: str | None = "0004_revoked_principals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    create_job_runs_table()


def downgrade() -> None:
    drop_job_runs_table()
