"""``uq_collections_event_id`` dropped: idempotency is the inbox's and ``posting_id``'s

Every collection row is written by the ``collection.posted`` handler, in the transaction that
records the event's id in the consumer's ``inbox`` (primary key ``(consumer, event_id)``), and it
books that one event's one posting. Two guarantees already keep a posting from being booked
twice, each a constraint of the database:

* a redelivered event (the same id) finds its inbox row and its handler does not run; a second
  copy of it in the same batch is dropped by the batch's inbox INSERT (``ON CONFLICT DO NOTHING
  RETURNING``);
* ``uq_collections_posting_id``: the same posting under any event id (another consumer name that
  reads the topic again, an event re-emitted with a new id) is booked once; the batch statement
  skips a posting already booked and the index refuses one booked concurrently.

So the unique index on ``event_id`` could never be the constraint that refuses a row on that
path: an event id repeated reaches the collections only through the inbox, which refuses it
first. It cost an index entry per collection at a random place of the index (event ids are
UUIDs): backend CPU of the batch statement alone 1.3-3.6 us per collection of ~20 (scratch
database of 20,000+ analyzed collections, medians of 9 rounds of 3,000, load ~3), up to ~7 where
the indexes carried the dead entries of many rolled-back rounds. ``event_id`` stays a column of
every collection row and of its derived journal entry, so each entry still names its event.

Downgrade creates the constraint again (it fails if two rows came to share an event id).

Revision ID: 0012_event_id_not_unique
Revises: 0011_collections_refer_derived
"""

from alembic import op

revision: str = "0012_event_id_not_unique"
down_revision: str | None = "0011_collections_refer_derived"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("ALTER TABLE collections DROP CONSTRAINT uq_collections_event_id")


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("ALTER TABLE collections ADD CONSTRAINT uq_collections_event_id UNIQUE (event_id)")
