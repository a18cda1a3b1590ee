"""lodging projection: effective-dated class and casino licence

The registry now publishes each lodging's attribute history; the projection keeps
it. Existing rows get one entry, the current values effective from registration
(the registry migrates its own rows the same way).

Revision ID: 0003_lodging_attributes
Revises: 0002_outbox_dead_letters
Create Date: 2026-12-01 09:45:00
"""

from collections.abc import Sequence

from servicekit.migrations import add_lodging_attributes, drop_lodging_attributes

revision: str = "0003_lodging_attributes"
down_revision: str | None = "0002_outbox_dead_letters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    add_lodging_attributes()


def downgrade() -> None:
    drop_lodging_attributes()
