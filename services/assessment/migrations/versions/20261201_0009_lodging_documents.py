"""lodging documents: the mailing address and language of official documents (registry projection)

Revision ID: 0009_lodging_documents
Revises: 0008_traceparent
Create Date: 2026-12-02 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009_lodging_documents"
down_revision: str | None = "0008_traceparent"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column("lodgings", sa.Column("address", postgresql.JSONB(), nullable=True))
    op.add_column("lodgings", sa.Column("preferred_language", sa.Text(), nullable=True))


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_column("lodgings", "preferred_language")
    op.drop_column("lodgings", "address")
