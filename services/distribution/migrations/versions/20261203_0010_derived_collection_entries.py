"""a collection's journal entry derived from its collection row instead of stored

After ``0009_derived_collection_lines`` a ``collection.posted`` still wrote two rows: its journal
entry and the collection row, and the entry said nothing the row does not (jurisdiction, kind
``collection``, effective on the day collected, the event id) but its description, now a column
of the row. So:

* the stored entries (runs, reversals, and collection entries this migration could not match)
  are the table ``stored_journal_entries`` (the former ``journal_entries``, with its append-only
  and balance triggers and its identity, from which a collection row still draws its
  ``entry_id``, so entry ids, cursors and the listing order are what they were);
* ``journal_entries`` is a view: the stored entries, then one entry per collection row with
  ``entry_derived``. Inserting into the view inserts into ``stored_journal_entries`` in the same
  statement (a rule); updating or deleting through it is refused as for the table.

Still enforced by the database: a derived entry is balanced (it needs the row's derived lines:
``ck_collections_entry_with_lines``); a stored entry needs its lines when its statement ends;
lines and collection rows refer to an entry that exists (the triggers read the view). A
collection row written without ``entry_derived`` (the default) must refer to a stored entry.
Each ``collection.posted`` writes one row (5 index entries) instead of two (9).

The entries listing by jurisdiction read ``ix_journal_entries_jurisdiction`` of the stored
entries; a derived entry's is the row's, so ``ix_collections_jurisdiction_collected_on`` becomes
``ix_collections_jurisdiction_entry_id`` (as many index entries): a jurisdiction's page of entries
is a range of it in id order, and what read the former index (a run's collections of a
jurisdiction up to a day, a jurisdiction's balances) reads the same jurisdiction's range. A
lodging's entries (``?tax_account=``) scanned every collection row, now wider by the entry's
description (2.2 -> 3.1 ms at 20,000 rows): ``ix_collections_tax_account_entry_id`` makes them a
range in id order too (one index entry more per collection: 6 in all, against 9 for a row and a
stored entry).

Not possible any more: a stored reversal entry's ``reverses_entry_id`` foreign key cannot name a
derived entry (nothing writes reversals today; one of a collection would need the key checked
against the view, as the lines' references are).

Upgrade: every collection with derived lines whose stored entry is exactly what the row derives
(collection kind, its event id, jurisdiction and day, no run or reversal, no stored line, no
other collection row, not reversed) gets the entry's description and ``entry_derived``, and the
stored entry is removed. Downgrade stores those entries again with their ids.

Revision ID: 0010_derived_collection_entries
Revises: 0009_derived_collection_lines
"""

from alembic import op

revision: str = "0010_derived_collection_entries"
down_revision: str | None = "0009_derived_collection_lines"
branch_labels = None
depends_on = None

ENTRIES_VIEW = """
CREATE VIEW journal_entries AS
SELECT id, jurisdiction, kind, effective_on, description, event_id, run_id, reverses_entry_id, posted_at
  FROM stored_journal_entries
UNION ALL
SELECT c.entry_id, c.jurisdiction, 'collection', c.collected_on, c.description, c.event_id,
       CAST(NULL AS text), CAST(NULL AS bigint), c.received_at
  FROM collections c WHERE c.entry_derived
"""

MATCHING = """
SELECT c.id, e.description
  FROM collections c JOIN stored_journal_entries e ON e.id = c.entry_id
 WHERE c.lines_derived AND e.kind = 'collection' AND e.event_id = c.event_id
   AND e.jurisdiction = c.jurisdiction AND e.effective_on = c.collected_on
   AND e.run_id IS NULL AND e.reverses_entry_id IS NULL
   AND NOT EXISTS (SELECT 1 FROM stored_journal_lines l WHERE l.entry_id = e.id)
   AND NOT EXISTS (SELECT 1 FROM stored_journal_entries r WHERE r.reverses_entry_id = e.id)
   AND (SELECT count(*) FROM collections o WHERE o.entry_id = c.entry_id) = 1
"""

UPGRADE = [
    "SET LOCAL lock_timeout = '5s'",
    "ALTER TABLE journal_entries RENAME TO stored_journal_entries",
    "ALTER TABLE collections ADD COLUMN description text, "
    "ADD COLUMN entry_derived boolean NOT NULL DEFAULT false",
    "ALTER TABLE collections DISABLE TRIGGER collections_append_only",
    f"UPDATE collections c SET entry_derived = true, description = m.description FROM ({MATCHING}) m "
    "WHERE m.id = c.id",
    "ALTER TABLE collections ENABLE TRIGGER collections_append_only",
    "ALTER TABLE collections ADD CONSTRAINT ck_collections_entry_with_lines "
    "CHECK (NOT entry_derived OR (lines_derived AND description IS NOT NULL))",
    "ALTER TABLE stored_journal_entries DISABLE TRIGGER journal_entries_append_only",
    "DELETE FROM stored_journal_entries e USING collections c WHERE c.entry_derived AND e.id = c.entry_id",
    "ALTER TABLE stored_journal_entries ENABLE TRIGGER journal_entries_append_only",
    "DROP INDEX ix_collections_jurisdiction_collected_on",
    "CREATE INDEX ix_collections_jurisdiction_entry_id ON collections (jurisdiction, entry_id)",
    "CREATE INDEX ix_collections_tax_account_entry_id ON collections (tax_account, entry_id)",
    ENTRIES_VIEW,
    "CREATE RULE journal_entries_insert AS ON INSERT TO journal_entries DO INSTEAD "
    "INSERT INTO stored_journal_entries (jurisdiction, kind, effective_on, description, event_id, run_id, "
    "reverses_entry_id) VALUES (NEW.jurisdiction, NEW.kind, NEW.effective_on, NEW.description, NEW.event_id, "
    "NEW.run_id, NEW.reverses_entry_id) "
    "RETURNING id, jurisdiction, kind, effective_on, description, event_id, run_id, reverses_entry_id, posted_at",
    "CREATE TRIGGER journal_entries_append_only INSTEAD OF UPDATE OR DELETE ON journal_entries "
    "FOR EACH ROW EXECUTE FUNCTION refuse_change()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in [
        "SET LOCAL lock_timeout = '5s'",
        "DROP VIEW journal_entries",
        "ALTER TABLE stored_journal_entries RENAME TO journal_entries",
        "INSERT INTO journal_entries (id, jurisdiction, kind, effective_on, description, event_id, posted_at) "
        "SELECT entry_id, jurisdiction, 'collection', collected_on, description, event_id, received_at "
        "FROM collections WHERE entry_derived ORDER BY entry_id",
        "DROP INDEX ix_collections_tax_account_entry_id",
        "DROP INDEX ix_collections_jurisdiction_entry_id",
        "CREATE INDEX ix_collections_jurisdiction_collected_on ON collections (jurisdiction, collected_on)",
        "ALTER TABLE collections DROP CONSTRAINT ck_collections_entry_with_lines",
        "ALTER TABLE collections DROP COLUMN entry_derived, DROP COLUMN description",
    ]:
        op.execute(statement)
