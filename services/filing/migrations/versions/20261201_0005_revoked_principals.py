"""revoked principals: the denylist of revoked clients and people (servicekit.revocations)

Revision ID: 0005_revoked_principals
Revises: 0004_parties
Create Date: 2026-12-01 09:30:00
"""

from collections.abc import Sequence

from servicekit.revocations import create_revocations_table, drop_revocations_table

revision: str = "0005_revoked_principals"
down_revision: str | None = "0004_parties"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    create_revocations_table()


def downgrade() -> None:
    drop_revocations_table()
