"""the ledger's references checked once per statement; index entries nothing reads dropped

A batch of 200 collections is one statement (``ledger.repository``): 200 entries, 400 lines and
200 collection rows. Per collection it paid 17 index entries and 5 foreign-key checks, each
check a query of its own with a row lock (``SELECT 1 ... FOR KEY SHARE``). Now:

* the references of journal lines (their entry, their account) and of collection rows (their
  entry) are checked when the statement ends, by statement triggers over the rows it inserted
  (one query per table and statement, an index probe per distinct entry or account), with the
  foreign keys' error code. The foreign keys' row locks kept a referenced row from being
  deleted or its key changed before the referencing transaction committed; accounts and
  journal entries refuse UPDATE, DELETE and TRUNCATE (migration 0001), so there is nothing to
  lock against, and the invariant, every line and collection row refers to an entry and an
  account that exist, stays the database's.
* ``ix_collections_payment_id`` and ``ix_journal_lines_account_code``: no query filters or joins
  on those columns (balances group every line by account; nothing looks a payment up; the
  foreign key that could have used the second is gone, and accounts are never deleted).
* ``run_id`` and ``reverses_entry_id`` stay unique, by partial indexes over the entries that
  have one: a collection's entry (NULL in both) no longer adds two index entries.

12 index entries per collection instead of 17, no row check.

Revision ID: 0008_ledger_write_path
Revises: 0007_statement_balance
"""

from alembic import op

revision: str = "0008_ledger_write_path"
down_revision: str | None = "0007_statement_balance"
branch_labels = None
depends_on = None

# An index probe per distinct referenced key (a scalar subquery per row: an anti-join could be
# planned as a scan of the whole referenced table).
CHECK_LINES_REFER = """
CREATE FUNCTION check_new_lines_refer() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    SELECT l.entry_id INTO missing FROM (SELECT DISTINCT entry_id FROM new_lines) l
     WHERE (SELECT true FROM journal_entries e WHERE e.id = l.entry_id) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal_lines refer to journal entry %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    SELECT l.account_code INTO missing FROM (SELECT DISTINCT account_code FROM new_lines) l
     WHERE (SELECT true FROM accounts a WHERE a.code = l.account_code) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal_lines refer to account %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$
"""

CHECK_COLLECTIONS_REFER = """
CREATE FUNCTION check_new_collections_refer() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    SELECT c.entry_id INTO missing FROM new_collections c
     WHERE (SELECT true FROM journal_entries e WHERE e.id = c.entry_id) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'collections refer to journal entry %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$
"""

UPGRADE = [
    "SET LOCAL lock_timeout = '5s'",
    CHECK_LINES_REFER,
    CHECK_COLLECTIONS_REFER,
    "CREATE TRIGGER journal_lines_refer AFTER INSERT ON journal_lines "
    "REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION check_new_lines_refer()",
    "CREATE TRIGGER collections_refer AFTER INSERT ON collections "
    "REFERENCING NEW TABLE AS new_collections FOR EACH STATEMENT EXECUTE FUNCTION check_new_collections_refer()",
    "ALTER TABLE journal_lines DROP CONSTRAINT fk_journal_lines_entry_id_journal_entries",
    "ALTER TABLE journal_lines DROP CONSTRAINT fk_journal_lines_account_code_accounts",
    "ALTER TABLE collections DROP CONSTRAINT fk_collections_entry_id_journal_entries",
    "DROP INDEX ix_collections_payment_id",
    "DROP INDEX ix_journal_lines_account_code",
    "ALTER TABLE journal_entries DROP CONSTRAINT uq_journal_entries_run_id",
    "ALTER TABLE journal_entries DROP CONSTRAINT uq_journal_entries_reverses_entry_id",
    "CREATE UNIQUE INDEX uq_journal_entries_run_id ON journal_entries (run_id) WHERE run_id IS NOT NULL",
    "CREATE UNIQUE INDEX uq_journal_entries_reverses_entry_id ON journal_entries (reverses_entry_id) "
    "WHERE reverses_entry_id IS NOT NULL",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in [
        "SET LOCAL lock_timeout = '5s'",
        "DROP INDEX uq_journal_entries_reverses_entry_id",
        "DROP INDEX uq_journal_entries_run_id",
        "ALTER TABLE journal_entries ADD CONSTRAINT uq_journal_entries_reverses_entry_id "
        "UNIQUE (reverses_entry_id)",
        "ALTER TABLE journal_entries ADD CONSTRAINT uq_journal_entries_run_id UNIQUE (run_id)",
        "CREATE INDEX ix_journal_lines_account_code ON journal_lines (account_code)",
        "CREATE INDEX ix_collections_payment_id ON collections (payment_id)",
        "ALTER TABLE collections ADD CONSTRAINT fk_collections_entry_id_journal_entries "
        "FOREIGN KEY (entry_id) REFERENCES journal_entries (id)",
        "ALTER TABLE journal_lines ADD CONSTRAINT fk_journal_lines_account_code_accounts "
        "FOREIGN KEY (account_code) REFERENCES accounts (code)",
        "ALTER TABLE journal_lines ADD CONSTRAINT fk_journal_lines_entry_id_journal_entries "
        "FOREIGN KEY (entry_id) REFERENCES journal_entries (id)",
        "DROP TRIGGER collections_refer ON collections",
        "DROP TRIGGER journal_lines_refer ON journal_lines",
        "DROP FUNCTION check_new_collections_refer()",
        "DROP FUNCTION check_new_lines_refer()",
    ]:
        op.execute(statement)
