"""parties: operator and facilitator names from the registry (for receipts)

Revision ID: 0004_parties
Revises: 0003_lodging_attributes
Create Date: 2026-12-01 09:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_parties"
down_revision: str | None = "0003_lodging_attributes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "parties",
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("party_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("kind", "party_id", name=op.f("pk_parties")),
    )


def downgrade() -> None:
    op.drop_table("parties")
