"""parties: operator and facilitator names from the registry (for receipts)

Revision ID: 0004_parties
Revises: 0003_lodging_attributes
Create Date: 2026-12-01 09:50:00
"""

from collections.abc import Sequence

from alembic import op

from servicekit.migrations import create_parties_projection

revision: str = "0004_parties"
down_revision: str | None = "0003_lodging_attributes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    create_parties_projection()


def downgrade() -> None:
    op.drop_table("parties")
