"""account_summaries.balance_digest: what a summary row's balance was computed from

A recomputation walks again only the periods whose digest changed (issue 12: a new declaration
of one period no longer walks the account's other periods to today).

Revision ID: 0012_summary_digest
Revises: 0011_session_revocations
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_summary_digest"
down_revision: str | None = "0011_session_revocations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.add_column("account_summaries", sa.Column("balance_digest", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_column("account_summaries", "balance_digest")
