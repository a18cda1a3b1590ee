"""declarations: the filer's latest version of a lodging-period found by one index

Every new return and every amendment reads the filer's latest version of the lodging-period
(``declarations.repository._FILING_CONTEXT``: ``lodging_id``, ``period``, ``filer_kind``,
``filer_id``, the highest ``version``). Two indexes each matched part of it:
``ix_declarations_lodging_period`` and ``ix_declarations_filer`` (``filer_kind``,
``filer_id``). asyncpg prepares the statement and PostgreSQL settles on a generic plan after five
executions; on a new service's table that plan took ``ix_declarations_filer`` and filtered the
lodging and the period, so every POST read every return its filer had ever filed: at the event-lag
bench's half rate (one operator, 3,000 lodgings) the lookup ran on ~5 of PostgreSQL's backends at
once, both cores, and filing fell from 511 to 118 declarations/s within four minutes (54,000
returns of that operator; bench/README.md, session 13). A chain's operator or an intermediary
files that many in a year.

``ix_declarations_lodging_period_filer`` holds the four columns and the version, in the order the
lookup reads them: one entry read, the highest version first (no sort). It replaces
``ix_declarations_lodging_period``, its prefix, so a return still adds as many index entries as
before. With the table's statistics (autovacuum's ANALYZE, on by default) the planner takes it
(backward, ``LIMIT 1``) in the generic plan as in the custom ones; on a table never analyzed it
may still estimate one row for the filer's index and take that one: this machine's PostgreSQL
runs with autovacuum off (docs/operations.md: a deployment must keep it on).

Revision ID: 0011_declarations_latest_index
Revises: 0010_lz4_documents
Create Date: 2026-12-07 15:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011_declarations_latest_index"
down_revision: str | None = "0010_lz4_documents"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_declarations_lodging_period_filer"
COLUMNS = ["lodging_id", "period", "filer_kind", "filer_id", "version"]


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_index(INDEX, "declarations", COLUMNS)
    op.drop_index("ix_declarations_lodging_period", table_name="declarations")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_index("ix_declarations_lodging_period", "declarations", ["lodging_id", "period"])
    op.drop_index(INDEX, table_name="declarations")
