"""a collection's two journal lines derived from its collection row instead of stored

A ``collection.posted`` booked four rows: its journal entry, the entry's two lines (debit
``cash:<J>`` the amount, credit ``pending:<J>`` the same amount) and the collection row, which
already holds everything the two lines say except the pending line's citation. Now the row
holds that citation too (``pending_section``) and the two lines are derived from it:

* the stored lines (runs, reversals, and collections booked before this migration whose lines
  were not exactly the derived pair) are the table ``stored_journal_lines`` (the former
  ``journal_lines``, with its append-only, balance and reference triggers);
* ``journal_lines`` is a view: the stored lines, then for every collection with
  ``lines_derived`` its cash line (id ``-2 * id - 1``, rule ``collection.posted``, the
  posting's section) and its pending line (id ``-2 * id``, the collection's
  ``pending_section``). Line ids are never shown by the API; the derived ones are negative so
  they never meet the identity's, and a collection's cash line sorts before its pending line
  as when they were stored. Inserting into the view inserts into ``stored_journal_lines`` in
  the same statement (a rule, so the statement triggers still see the whole statement);
  updating or deleting through it is refused as for the table.

The ledger stays double-entry and balanced by the database: a derived pair sums to zero by
its definition (and the amount is never zero: ``ck_collections_amount_nonzero``); an entry
still needs at least two lines summing to zero when the statement that wrote it ends (the
entries' trigger reads the view); a collection row refers to an entry and to the two accounts
its lines name (``collections_refer``). Each ``collection.posted`` writes two rows instead of
four (and 8 index entries instead of 12: ``ix_collections_entry_id`` is new, for the view).

Upgrade: every collection whose entry has exactly its two derived lines stored (same
accounts, amounts, rule, sections, cash first) and no other collection gets ``lines_derived``
and its pending citation, and those stored lines are removed; any other keeps its stored
lines. Downgrade stores the derived lines again (cash then pending, in collection order).

Revision ID: 0009_derived_collection_lines
Revises: 0008_ledger_write_path
"""

from alembic import op

revision: str = "0009_derived_collection_lines"
down_revision: str | None = "0008_ledger_write_path"
branch_labels = None
depends_on = None

LINES_VIEW = """
CREATE VIEW journal_lines AS
SELECT id, entry_id, account_code, amount, rule, section FROM stored_journal_lines
UNION ALL
SELECT -2 * c.id - 1, c.entry_id, 'cash:' || c.jurisdiction, c.amount, 'collection.posted', c.section
  FROM collections c WHERE c.lines_derived
UNION ALL
SELECT -2 * c.id, c.entry_id, 'pending:' || c.jurisdiction, CAST(-c.amount AS numeric(18, 2)),
       'collection.posted', c.pending_section
  FROM collections c WHERE c.lines_derived
"""

# the collection rows whose entry's stored lines are exactly the derived pair
MATCHING = """
SELECT c.id, p.section AS pending_section
  FROM collections c
  JOIN stored_journal_lines k ON k.entry_id = c.entry_id AND k.account_code = 'cash:' || c.jurisdiction
       AND k.amount = c.amount AND k.rule = 'collection.posted' AND k.section IS NOT DISTINCT FROM c.section
  JOIN stored_journal_lines p ON p.entry_id = c.entry_id AND p.account_code = 'pending:' || c.jurisdiction
       AND p.amount = -c.amount AND p.rule = 'collection.posted' AND k.id < p.id
 WHERE (SELECT count(*) FROM stored_journal_lines l WHERE l.entry_id = c.entry_id) = 2
   AND (SELECT count(*) FROM collections o WHERE o.entry_id = c.entry_id) = 1
"""

REFER_WITH_ACCOUNTS = """
CREATE OR REPLACE FUNCTION check_new_collections_refer() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    SELECT c.entry_id INTO missing FROM new_collections c
     WHERE (SELECT true FROM journal_entries e WHERE e.id = c.entry_id) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'collections refer to journal entry %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    -- the accounts of the two lines derived from each (journal_lines)
    SELECT a.code INTO missing FROM (
        SELECT DISTINCT kind || ':' || jurisdiction AS code
          FROM new_collections CROSS JOIN (VALUES ('cash'), ('pending')) AS k(kind) WHERE lines_derived
    ) a WHERE (SELECT true FROM accounts x WHERE x.code = a.code) IS NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'collections refer to account %, which does not exist', missing
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$
"""

REFER_ENTRY_ONLY = """
CREATE OR REPLACE FUNCTION check_new_collections_refer() RETURNS trigger LANGUAGE plpgsql AS $$
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
    "ALTER TABLE journal_lines RENAME TO stored_journal_lines",
    # existing rows: not derived until shown to match; new rows: derived
    "ALTER TABLE collections ADD COLUMN pending_section text, "
    "ADD COLUMN lines_derived boolean NOT NULL DEFAULT false",
    "ALTER TABLE collections ALTER COLUMN lines_derived SET DEFAULT true",
    "ALTER TABLE collections DISABLE TRIGGER collections_append_only",
    f"UPDATE collections c SET lines_derived = true, pending_section = m.pending_section "
    f"FROM ({MATCHING}) m WHERE m.id = c.id",
    "ALTER TABLE collections ENABLE TRIGGER collections_append_only",
    "ALTER TABLE stored_journal_lines DISABLE TRIGGER journal_lines_append_only",
    "DELETE FROM stored_journal_lines l USING collections c WHERE c.lines_derived AND l.entry_id = c.entry_id",
    "ALTER TABLE stored_journal_lines ENABLE TRIGGER journal_lines_append_only",
    "CREATE INDEX ix_collections_entry_id ON collections (entry_id)",
    LINES_VIEW,
    "CREATE RULE journal_lines_insert AS ON INSERT TO journal_lines DO INSTEAD "
    "INSERT INTO stored_journal_lines (entry_id, account_code, amount, rule, section) "
    "VALUES (NEW.entry_id, NEW.account_code, NEW.amount, NEW.rule, NEW.section) "
    "RETURNING id, entry_id, account_code, amount, rule, section",
    "CREATE TRIGGER journal_lines_append_only INSTEAD OF UPDATE OR DELETE ON journal_lines "
    "FOR EACH ROW EXECUTE FUNCTION refuse_change()",
    REFER_WITH_ACCOUNTS,
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in [
        "SET LOCAL lock_timeout = '5s'",
        "DROP VIEW journal_lines",
        "ALTER TABLE stored_journal_lines RENAME TO journal_lines",
        "INSERT INTO journal_lines (entry_id, account_code, amount, rule, section) "
        "SELECT c.entry_id, l.account_code, l.amount, 'collection.posted', l.section FROM collections c "
        "CROSS JOIN LATERAL (VALUES (1, 'cash:' || c.jurisdiction, c.amount, c.section), "
        "(2, 'pending:' || c.jurisdiction, -c.amount, c.pending_section)) AS l(k, account_code, amount, section) "
        "WHERE c.lines_derived ORDER BY c.id, l.k",
        REFER_ENTRY_ONLY,
        "DROP INDEX ix_collections_entry_id",
        "ALTER TABLE collections DROP COLUMN lines_derived, DROP COLUMN pending_section",
    ]:
        op.execute(statement)
