"""authorizations: one index on (lodging_id, facilitator_id)

A schedule looks up, for each of its rows, whether the lodging authorized the facilitator
(``schedules.repository.lodgings_for_facilitator``). With only the single-column indexes the
planner combined ``ix_authorizations_facilitator_id`` (every authorization of a large
intermediary: 50,000 entries read per row) with the lodging's: ~7 ms of PostgreSQL per row at
50,000 authorizations, 14 s per 2,000-row chunk. With this index: one probe, 40 ms per chunk
(issue 12: a schedule's cost linear in its rows).

Revision ID: 0009_auth_lodging_facilitator
Revises: 0008_deferred_schedule_fk
Create Date: 2026-12-02 01:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009_auth_lodging_facilitator"
down_revision: str | None = "0008_deferred_schedule_fk"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_authorizations_lodging_id_facilitator_id"


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_index(INDEX, "authorizations", ["lodging_id", "facilitator_id"])


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.drop_index(INDEX, table_name="authorizations")
