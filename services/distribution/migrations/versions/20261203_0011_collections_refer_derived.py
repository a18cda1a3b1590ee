"""``collections_refer`` checks a row's entry only where the row is not its own entry

Since ``0010_derived_collection_entries`` a collection row with ``entry_derived`` IS its journal
entry: the view ``journal_entries`` holds one entry per such row, with the row's ``entry_id``. The
statement trigger ``collections_refer`` still looked that entry up for every row it inserted (an
index probe into the stored entries and one into ``ix_collections_entry_id`` through the view, 200
of each per batch of the consumer), a check that cannot fail for such a row: the entry it looks
for is the row itself. It is now made for the rows without ``entry_derived`` only (the
collections whose entry is stored), which it still refuses with the foreign key's error code.

The accounts of the two lines derived from a row (``cash:<j>``, ``pending:<j>``) are still
checked for every row with ``lines_derived``, once per distinct jurisdiction of the statement
(it built the two codes of every row, then their distinct set: 400 strings for one or two
jurisdictions).

``jit = off`` for the function: its queries scan a transition table, of which the planner has no
statistics, and their cost was estimated from ``collections``' statistics; on a table not yet
analyzed (25,000 rows, a fresh database) the entry check was estimated at 256,000, above
``jit_above_cost``, and every batch paid ~10 ms of JIT compilation (50 us per collection) for a
query that runs in well under 1 ms.

Revision ID: 0011_collections_refer_derived
Revises: 0010_derived_collection_entries
"""

from alembic import op

revision: str = "0011_collections_refer_derived"
down_revision: str | None = "0010_derived_collection_entries"
branch_labels = None
depends_on = None


def refer(*, entry_checked: str, codes: str, settings: str) -> str:
    """``check_new_collections_refer``: the rows ``entry_checked`` must refer to an entry that
    exists; ``codes``, the accounts of the lines derived from the rows with ``lines_derived``."""
    return f"""
CREATE OR REPLACE FUNCTION check_new_collections_refer() RETURNS trigger LANGUAGE plpgsql {settings} AS $$
DECLARE
    missing text;
BEGIN
    SELECT c.entry_id INTO missing FROM new_collections c
     WHERE {entry_checked} (SELECT true FROM journal_entries e WHERE e.id = c.entry_id) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'collections refer to journal entry %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    -- the accounts of the two lines derived from each (journal_lines)
    SELECT a.code INTO missing FROM ({codes}) a WHERE (SELECT true FROM accounts x WHERE x.code = a.code) IS NULL
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'collections refer to account %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$
"""


# a row with entry_derived is its own entry (view journal_entries)
REFER = refer(
    entry_checked="NOT c.entry_derived AND",
    codes="SELECT k.kind || ':' || j.jurisdiction AS code "
    "FROM (SELECT DISTINCT jurisdiction FROM new_collections WHERE lines_derived) j "
    "CROSS JOIN (VALUES ('cash'), ('pending')) AS k(kind)",
    settings="SET jit = off",
)
# as 0009_derived_collection_lines wrote it
REFER_BEFORE = refer(
    entry_checked="",
    codes="SELECT DISTINCT kind || ':' || jurisdiction AS code "
    "FROM new_collections CROSS JOIN (VALUES ('cash'), ('pending')) AS k(kind) WHERE lines_derived",
    settings="",
)


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(REFER)


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute(REFER_BEFORE)  # CREATE OR REPLACE without SET: the function's jit setting goes
