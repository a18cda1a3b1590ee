"""a journal entry's run and reversed entry checked once per statement instead of per row

A batch of 200 collections inserts 200 journal entries in one statement (``ledger.repository``),
and each fired the row triggers of two foreign keys (``run_id`` to runs, ``reverses_entry_id``
to journal entries): 400 queued trigger events a batch, every one finding a NULL, since a
collection's entry has neither. Now one statement trigger over the rows the statement inserted
checks the entries that have one (a subquery per such row, an index probe), with the foreign
keys' error code, as ``journal_lines_refer`` and ``collections_refer`` do (migration 0008).
Runs and journal entries refuse UPDATE, DELETE and TRUNCATE (migration 0001), so the foreign
keys' row locks guarded nothing, and the invariant, every run or reversed entry referred to
exists, stays the database's.

Revision ID: new_entry_references
Revises: 0008_ledger_write_path
"""

from alembic import op

revision: str = "new_entry_references"
down_revision: str | None = "0008_ledger_write_path"
branch_labels = None
depends_on = None

CHECK_ENTRIES_REFER = """
CREATE FUNCTION check_new_entries_refer() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    SELECT e.run_id INTO missing FROM new_entries e
     WHERE e.run_id IS NOT NULL AND (SELECT true FROM runs r WHERE r.id = e.run_id) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal_entries refer to run %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    SELECT e.reverses_entry_id INTO missing FROM new_entries e
     WHERE e.reverses_entry_id IS NOT NULL
       AND (SELECT true FROM journal_entries r WHERE r.id = e.reverses_entry_id) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal_entries refer to journal entry %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$
"""

UPGRADE = [
    "SET LOCAL lock_timeout = '5s'",
    CHECK_ENTRIES_REFER,
    "CREATE TRIGGER journal_entries_refer AFTER INSERT ON journal_entries "
    "REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION check_new_entries_refer()",
    "ALTER TABLE journal_entries DROP CONSTRAINT fk_journal_entries_run_id_runs",
    "ALTER TABLE journal_entries DROP CONSTRAINT fk_journal_entries_reverses_entry_id_journal_entries",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in [
        "SET LOCAL lock_timeout = '5s'",
        "ALTER TABLE journal_entries ADD CONSTRAINT fk_journal_entries_reverses_entry_id_journal_entries "
        "FOREIGN KEY (reverses_entry_id) REFERENCES journal_entries (id)",
        "ALTER TABLE journal_entries ADD CONSTRAINT fk_journal_entries_run_id_runs "
        "FOREIGN KEY (run_id) REFERENCES runs (id)",
        "DROP TRIGGER journal_entries_refer ON journal_entries",
        "DROP FUNCTION check_new_entries_refer()",
    ]:
        op.execute(statement)
