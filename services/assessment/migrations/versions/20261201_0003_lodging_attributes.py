"""lodging projection: effective-dated class and casino licence

The registry now publishes each lodging's attribute history; the projection keeps
it. Existing rows get one entry, the current values effective from registration
(the registry migrates its own rows the same way).

Revision ID: 0003_lodging_attributes
Revises: 0002_outbox_dead_letters
Create Date: 2026-12-01 09:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003_lodging_attributes"
down_revision: str | None = "0002_outbox_dead_letters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column(
        "lodgings",
        sa.Column(
            "attributes",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
        ),
    )
    op.execute(
        "UPDATE lodgings SET attributes = jsonb_build_array(jsonb_build_object("
        "'effective_from', to_char(registered_on, 'YYYY-MM-DD'), "
        "'lodging_class', lodging_class, 'casino', casino))"
    )
    op.alter_column("lodgings", "attributes", server_default=None)


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_column("lodgings", "attributes")
