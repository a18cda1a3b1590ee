"""a declaration's trace and a schedule's results compressed with lz4 instead of pglz

A declaration row is ~2.4 kB, its trace ~2.1 kB of JSON (~1 kB stored): over TOAST's
threshold, so PostgreSQL compresses the trace of every row it writes; a schedule's results
are one document of ~210 bytes per row. pglz spent ~8-10 us of PostgreSQL's CPU per
declaration of a schedule's COPY and ~1.5 us per row of the schedule's results; lz4 does the
same in a fraction of that, for ~7% more stored bytes (issue 12: a schedule's cost per row).
Reading is unchanged: a value carries its method, so rows written before keep pglz and both
read alike (``ALTER ... SET COMPRESSION`` rewrites nothing). A server built without lz4 (the
embedded ``pgserver`` the scripts start where no PostgreSQL listens) keeps the default, pglz:
the saving is a server's build option, never a condition of the schema.

Revision ID: 0010_lz4_documents
Revises: 0009_auth_lodging_facilitator
Create Date: 2026-12-07 01:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_lz4_documents"
down_revision: str | None = "0009_auth_lodging_facilitator"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (table, column) of the documents compressed with lz4
COLUMNS = (("declarations", "trace"), ("remittance_schedules", "results"))


#: true where the server was built with lz4 (the setting's values list it only then)
HAS_LZ4 = "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    if not op.get_bind().execute(sa.text(HAS_LZ4)).scalar():
        return  # built without lz4: the columns keep the server's default (pglz)
    for table, column in COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    for table, column in COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION DEFAULT")
