"""outbox dead letters: rows the relay parks instead of retrying them forever

Revision ID: 0002_outbox_dead_letters
Revises: 0001
Create Date: 2026-12-01 09:30:00
"""

from collections.abc import Sequence

from servicekit.migrations import create_outbox_dead_letters, drop_outbox_dead_letters

revision: str = "0002_outbox_dead_letters"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    create_outbox_dead_letters()


def downgrade() -> None:
    drop_outbox_dead_letters()
