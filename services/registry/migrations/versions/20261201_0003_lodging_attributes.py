"""lodging attributes: effective-dated class and casino licence

Creates the append-only history and fills it from the current values, effective
from each lodging's registration (the only date the register knows for them).

Revision ID: 0003_lodging_attributes
Revises: 0002_outbox_dead_letters
Create Date: 2026-12-01 09:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_lodging_attributes"
down_revision: str | None = "0002_outbox_dead_letters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "lodging_attributes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("lodging_id", sa.Text(), nullable=False),
        sa.Column("effective_from", sa.Date(), nullable=False),
        sa.Column("lodging_class", sa.Text(), nullable=False),
        sa.Column("casino", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("recorded_by", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["lodging_id"], ["lodgings.id"], name=op.f("fk_lodging_attributes_lodging_id_lodgings")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lodging_attributes")),
    )
    op.create_index(
        op.f("ix_lodging_attributes_lodging_id"), "lodging_attributes", ["lodging_id"], unique=False
    )
    op.execute(
        "INSERT INTO lodging_attributes (lodging_id, effective_from, lodging_class, casino, reason) "
        "SELECT id, registered_on, lodging_class, casino, 'registration (migrated)' FROM lodgings"
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_index(op.f("ix_lodging_attributes_lodging_id"), table_name="lodging_attributes")
    op.drop_table("lodging_attributes")
