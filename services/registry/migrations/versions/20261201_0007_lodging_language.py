"""lodging language: the language of a lodging's official documents (en/es)

Revision ID: 0007_lodging_language
Revises: 0006_traceparent
Create Date: 2026-12-02 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_lodging_language"
down_revision: str | None = "0006_traceparent"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column("lodgings", sa.Column("preferred_language", sa.Text(), nullable=True))
    op.create_check_constraint(
        op.f("ck_lodgings_preferred_language"), "lodgings", "preferred_language IN ('en', 'es')"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_constraint(op.f("ck_lodgings_preferred_language"), "lodgings", type_="check")
    op.drop_column("lodgings", "preferred_language")
