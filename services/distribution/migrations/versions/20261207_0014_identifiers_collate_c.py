"""a collection's identifiers compared as bytes: ``posting_id`` and ``tax_account`` COLLATE "C"

Two of ``collections``' indexes lead with one of them: ``uq_collections_posting_id`` (every
batch probes it for each posting, then inserts into it) and ``ix_collections_tax_account_entry_id``.
Under the database's collation each comparison of a descent that meets two different strings is
``varstr_cmp``: both copied into NUL-terminated buffers and handed to ``strcoll``, unless the
collation is "C" itself (PostgreSQL 15 treats even ``C.UTF-8`` so). These are identifiers (a
posting's id, a lodging's tax account), equal or not, never sorted for a person to read, so the
columns take the "C" collation: a comparison is a ``memcmp``. Equality is the same under both
(the collations are deterministic), so no row, no uniqueness and no filter changes. Scratch
database of 20,000 collections (C.UTF-8), the batch statement of 200 alternately against a copy
with these collations, 60 batches each, load 2-4: EXPLAIN (ANALYZE, TIMING OFF) median 5.57 ->
4.25 ms (with ``jurisdiction`` too: 4.28-5.12 -> 3.77-4.42 ms), the backend's CPU per row
median 21.2 -> 20.1 us (bench/README.md, session 13); a costlier collation (en_US) gains more.

``jurisdiction`` keeps the database's collation: its comparisons are mostly of equal strings
("PR" with "PR", which ``varstr_cmp`` settles by ``memcmp``), and the account codes made of it
(``'cash:' || jurisdiction``: the view ``journal_lines``, the trigger ``collections_refer``)
must compare with ``accounts.code`` under its collation to use ``pk_accounts``.

The views built on these columns (``journal_lines``, ``collection_entries``, ``journal_entries``)
would refuse the ALTER: they are dropped and created again with their own definitions as the
database prints them, and their rules and INSTEAD OF triggers (an INSERT into a view goes to the
stored table, an UPDATE or DELETE is refused) with them (``pg_dump --schema-only`` of head and of
0013 differ in the two columns' collation only; downgraded, in nothing). A view's column made of
these now has the "C" collation (``tax_account``, an entry's description), so a filter on a
lodging through a view still uses its index. The ALTER rebuilds the two indexes (the table is
not rewritten: the type does not change) under an exclusive lock of ``collections``.

Downgrade gives the columns the database's collation again, the same way.

Revision ID: 0014_identifiers_collate_c
Revises: 0013_derived_descriptions
"""

from alembic import op

revision: str = "0014_identifiers_collate_c"
down_revision: str | None = "0013_derived_descriptions"
branch_labels = None
depends_on = None

COLUMNS = ("posting_id", "tax_account")
#: dropped in this order (``journal_entries`` reads ``collection_entries``), created in reverse
VIEWS = ("journal_entries", "journal_lines", "collection_entries")


def _collate(collation: str) -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    bind = op.get_bind()

    def printed(query: str) -> list[str]:
        return list(bind.exec_driver_sql(query).scalars())

    # each view as the database prints it, then its rules (``journal_*_insert``: an INSERT goes to
    # the stored table) and its INSTEAD OF triggers (``journal_*_append_only``), all dropped with it
    views = ", ".join(f"CAST('{view}' AS regclass)" for view in VIEWS)
    rules = printed(
        f"SELECT pg_get_ruledef(oid) FROM pg_rewrite WHERE ev_class IN ({views}) "
        "AND rulename <> '_RETURN' ORDER BY rulename"
    )
    triggers = printed(
        f"SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid IN ({views}) "
        "AND NOT tgisinternal ORDER BY tgname"
    )
    definitions = {view: printed(f"SELECT pg_get_viewdef(CAST('{view}' AS regclass))")[0] for view in VIEWS}
    for view in VIEWS:
        op.execute(f"DROP VIEW {view}")
    op.execute(
        "ALTER TABLE collections "
        + ", ".join(f"ALTER COLUMN {c} TYPE text COLLATE {collation}" for c in COLUMNS)
    )
    # as the database printed them: no bind parameters read into them
    for view in reversed(VIEWS):
        bind.exec_driver_sql(f"CREATE VIEW {view} AS {definitions[view]}")
    for statement in [*rules, *triggers]:
        bind.exec_driver_sql(statement)


def upgrade() -> None:
    _collate('"C"')


def downgrade() -> None:
    _collate('"default"')
