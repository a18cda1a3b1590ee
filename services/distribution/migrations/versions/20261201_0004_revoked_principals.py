"""revoked principals: the denylist of revoked clients and people (servicekit.revocations)

Revision ID: 0004_revoked_principals
Revises: 0003_opening_states
Create Date: 2026-12-01 09:30:00
"""

from collections.abc import Sequence

from servicekit.revocations import create_revocations_table, drop_revocations_table

revision: str = "0004_revoked_principals"
down_revision: str | None = "0003_opening_states"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    create_revocations_table()


def downgrade() -> None:
    drop_revocations_table()
