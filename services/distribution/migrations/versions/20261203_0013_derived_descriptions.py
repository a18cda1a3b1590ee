"""a collection's entry description derived from its row instead of stored

Since ``0010_derived_collection_entries`` a collection row is its journal entry and stored the
entry's description, a sentence made of the row's own columns ("collection <posting> of payment
<payment>: <component> <amount> for <tax account> <period>", and " (give-back of refund <id>)" for
a give-back), ~75 bytes of each row. The row now keeps what the sentence needs and not the
sentence: ``refund_id`` (NULL but for give-backs) is a column, and the view
``collection_entries`` (the entries of the collection rows with ``entry_derived``, which
``journal_entries`` lists after the stored entries, and the entries listing reads page by page)
writes the sentence. Rows booked before keep their stored text (``coalesce``), so no entry reads
otherwise than it did; the sentence's format is the view's, so a new format must store the old
rows' text first.

``amount`` is ``numeric(18, 2)``: its text has two decimals and a leading '-' when negative, as
the amount the consumer wrote into the sentence (a ``Decimal`` quantized to the cent).

Revision ID: 0013_derived_descriptions
Revises: 0012_event_id_not_unique
"""

from alembic import op

revision: str = "0013_derived_descriptions"
down_revision: str | None = "0012_event_id_not_unique"
branch_labels = None
depends_on = None

SENTENCE = (
    "'collection ' || c.posting_id || ' of payment ' || c.payment_id || ': ' || c.component || ' ' "
    "|| CAST(c.amount AS text) || ' for ' || c.tax_account || ' ' || c.period "
    "|| coalesce(' (give-back of refund ' || c.refund_id || ')', '')"
)

COLUMNS = "id, jurisdiction, kind, effective_on, description, event_id, run_id, reverses_entry_id, posted_at"
STORED = f"SELECT {COLUMNS} FROM stored_journal_entries UNION ALL"


def derived(description: str) -> str:
    """The entries of the collection rows with ``entry_derived`` (and each one's lodging, which the
    entries listing filters on)."""
    return (
        f"SELECT c.entry_id AS id, c.jurisdiction, CAST('collection' AS text) AS kind, c.collected_on "
        f"AS effective_on, {description} AS description, c.event_id, CAST(NULL AS text) AS run_id, "
        "CAST(NULL AS bigint) AS reverses_entry_id, c.received_at AS posted_at, c.tax_account "
        "FROM collections c WHERE c.entry_derived"
    )


def upgrade() -> None:
    for statement in [
        "SET LOCAL lock_timeout = '5s'",
        "ALTER TABLE collections ADD COLUMN refund_id text",
        f"CREATE VIEW collection_entries AS {derived(f'coalesce(c.description, {SENTENCE})')}",
        f"CREATE OR REPLACE VIEW journal_entries AS {STORED} SELECT {COLUMNS} FROM collection_entries",
        "ALTER TABLE collections DROP CONSTRAINT ck_collections_entry_with_lines",
        "ALTER TABLE collections ADD CONSTRAINT ck_collections_entry_with_lines "
        "CHECK (NOT entry_derived OR lines_derived)",
    ]:
        op.execute(statement)


def downgrade() -> None:
    for statement in [
        "SET LOCAL lock_timeout = '5s'",
        "ALTER TABLE collections DISABLE TRIGGER collections_append_only",
        f"UPDATE collections c SET description = {SENTENCE} WHERE c.entry_derived AND c.description IS NULL",
        "ALTER TABLE collections ENABLE TRIGGER collections_append_only",
        "ALTER TABLE collections DROP CONSTRAINT ck_collections_entry_with_lines",
        "ALTER TABLE collections ADD CONSTRAINT ck_collections_entry_with_lines "
        "CHECK (NOT entry_derived OR (lines_derived AND description IS NOT NULL))",
        f"CREATE OR REPLACE VIEW journal_entries AS {STORED} SELECT {COLUMNS} FROM ({derived('c.description')}) d",
        "DROP VIEW collection_entries",
        "ALTER TABLE collections DROP COLUMN refund_id",
    ]:
        op.execute(statement)
