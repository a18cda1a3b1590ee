"""opening states: what each fund received before the first run (go-live)

Revision ID: 0003_opening_states
Revises: 0002_outbox_dead_letters
Create Date: 2026-12-01 09:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003_opening_states"
down_revision: str | None = "0002_outbox_dead_letters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "opening_states",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("fiscal_year", sa.Integer(), nullable=False),
        sa.Column("through_month", sa.Text(), nullable=False),
        sa.Column("transferred", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("document_reference", sa.Text(), nullable=False),
        sa.Column("supersedes_id", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("entered_by", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["supersedes_id"],
            ["opening_states.id"],
            name=op.f("fk_opening_states_supersedes_id_opening_states"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_opening_states")),
        sa.UniqueConstraint("jurisdiction", "version", name=op.f("uq_opening_states_jurisdiction_version")),
        sa.UniqueConstraint("supersedes_id", name=op.f("uq_opening_states_supersedes_id")),
    )
    # append-only like every other table of the ledger (refuse_change() is the first revision's)
    op.execute(
        "CREATE TRIGGER opening_states_append_only BEFORE UPDATE OR DELETE ON opening_states "
        "FOR EACH ROW EXECUTE FUNCTION refuse_change()"
    )
    op.execute(
        "CREATE TRIGGER opening_states_no_truncate BEFORE TRUNCATE ON opening_states "
        "FOR EACH STATEMENT EXECUTE FUNCTION refuse_change()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER opening_states_no_truncate ON opening_states")
    op.execute("DROP TRIGGER opening_states_append_only ON opening_states")
    op.drop_table("opening_states")
