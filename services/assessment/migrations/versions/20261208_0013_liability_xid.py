"""liabilities.created_xid: the transaction that wrote the row, for the peers' cache; lodgings by place

A worker keeps the peers of a group (jurisdiction, municipality, period) it has read and, at its
next batch, reads only the operator returns committed since: the rows whose transaction its
snapshot then did not see (``pg_visible_in_snapshot``), found by ``ix_liabilities_period_xid``
from that snapshot's xmin (issue 12: the peers were a probe of each lodging of the
municipality, every batch). Rows written before this migration keep NULL: they were committed
before any snapshot a worker keeps.

Revision ID: 0013_liability_xid
Revises: 0012_summary_digest
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013_liability_xid"
down_revision: str | None = "0012_summary_digest"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    # no default on ADD COLUMN: a volatile default would rewrite the table; new rows get it
    op.execute("ALTER TABLE liabilities ADD COLUMN created_xid xid8")
    op.execute("ALTER TABLE liabilities ALTER COLUMN created_xid SET DEFAULT pg_current_xact_id()")
    op.execute(
        "CREATE INDEX ix_liabilities_period_xid ON liabilities (period, created_xid) "
        "WHERE filer_kind = 'operator'"
    )
    # a group's lodgings (the peers' statement reads them each batch): the municipality's rows,
    # not every lodging of the platform's
    op.execute("CREATE INDEX ix_lodgings_place ON lodgings (jurisdiction, municipality, tax_account)")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("DROP INDEX ix_lodgings_place")
    op.execute("DROP INDEX ix_liabilities_period_xid")
    op.execute("ALTER TABLE liabilities DROP COLUMN created_xid")
