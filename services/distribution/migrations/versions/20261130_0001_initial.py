"""initial

Revision ID: 0001
Revises:
Create Date: 2026-11-30 12:21:20.749925
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from servicekit.migrations import create_chassis_tables, drop_chassis_tables

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


APPEND_ONLY = (
    "accounts",
    "certifications",
    "runs",
    "journal_entries",
    "journal_lines",
    "collections",
    "run_collections",
)

REFUSE_CHANGE = """
CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % refused (post a reversing entry instead)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END $$
"""

CHECK_ENTRY_BALANCED = """
CREATE FUNCTION check_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total numeric;
    lines integer;
BEGIN
    SELECT coalesce(sum(amount), 0), count(*) INTO total, lines
      FROM journal_lines WHERE entry_id = NEW.id;
    IF lines < 2 OR total <> 0 THEN
        RAISE EXCEPTION 'journal entry % does not balance: % lines summing to %', NEW.id, lines, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$
"""

CHECK_LINE_ENTRY_BALANCED = """
CREATE FUNCTION check_line_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total numeric;
BEGIN
    SELECT coalesce(sum(amount), 0) INTO total FROM journal_lines WHERE entry_id = NEW.entry_id;
    IF total <> 0 THEN
        RAISE EXCEPTION 'journal entry % does not balance: lines sum to %', NEW.entry_id, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$
"""

# Append-only tables refuse UPDATE, DELETE and TRUNCATE; every journal entry must balance at
# commit (deferred constraint triggers: the entry is inserted before its lines).
LEDGER_RULES = [
    REFUSE_CHANGE,
    *(
        f"CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE ON {t} "
        "FOR EACH ROW EXECUTE FUNCTION refuse_change()"
        for t in APPEND_ONLY
    ),
    *(
        f"CREATE TRIGGER {t}_no_truncate BEFORE TRUNCATE ON {t} "
        "FOR EACH STATEMENT EXECUTE FUNCTION refuse_change()"
        for t in APPEND_ONLY
    ),
    CHECK_ENTRY_BALANCED,
    CHECK_LINE_ENTRY_BALANCED,
    "CREATE CONSTRAINT TRIGGER journal_entries_balanced AFTER INSERT ON journal_entries "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_entry_balanced()",
    "CREATE CONSTRAINT TRIGGER journal_lines_balanced AFTER INSERT ON journal_lines "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_line_entry_balanced()",
]

DROP_LEDGER_RULES = [
    "DROP TRIGGER journal_lines_balanced ON journal_lines",
    "DROP TRIGGER journal_entries_balanced ON journal_entries",
    "DROP FUNCTION check_line_entry_balanced()",
    "DROP FUNCTION check_entry_balanced()",
    *(f"DROP TRIGGER {t}_append_only ON {t}" for t in APPEND_ONLY),
    *(f"DROP TRIGGER {t}_no_truncate ON {t}" for t in APPEND_ONLY),
    "DROP FUNCTION refuse_change()",
]


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    create_chassis_tables()
    op.create_table(
        "accounts",
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("section", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "kind IN ('cash', 'pending', 'fund', 'other', 'suspense')", name=op.f("ck_accounts_kind_known")
        ),
        sa.PrimaryKeyConstraint("code", name=op.f("pk_accounts")),
    )
    op.create_index(op.f("ix_accounts_jurisdiction"), "accounts", ["jurisdiction"], unique=False)
    op.create_table(
        "certifications",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("fiscal_year", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("amount", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("certified_on", sa.Date(), nullable=False),
        sa.Column("document_reference", sa.Text(), nullable=False),
        sa.Column("first_year_months_remaining", sa.Integer(), nullable=True),
        sa.Column("supersedes_id", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("amount >= 0", name=op.f("ck_certifications_amount_nonnegative")),
        sa.CheckConstraint(
            "first_year_months_remaining IS NULL OR first_year_months_remaining BETWEEN 1 AND 12",
            name=op.f("ck_certifications_months_remaining_range"),
        ),
        sa.ForeignKeyConstraint(
            ["supersedes_id"],
            ["certifications.id"],
            name=op.f("fk_certifications_supersedes_id_certifications"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_certifications")),
        sa.UniqueConstraint(
            "jurisdiction",
            "fiscal_year",
            "version",
            name=op.f("uq_certifications_jurisdiction_fiscal_year_version"),
        ),
        sa.UniqueConstraint("supersedes_id", name=op.f("uq_certifications_supersedes_id")),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("month", sa.Text(), nullable=False),
        sa.Column("fiscal_year", sa.Integer(), nullable=False),
        sa.Column("closed_through", sa.Date(), nullable=False),
        sa.Column("collected", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("collected_in_month", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("released", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("pending", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("certification_id", sa.Text(), nullable=True),
        sa.Column("inputs", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("allocations", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("state", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("trace", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("posted_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["certification_id"], ["certifications.id"], name=op.f("fk_runs_certification_id_certifications")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("jurisdiction", "month", name=op.f("uq_runs_jurisdiction_month")),
    )
    op.create_table(
        "journal_entries",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("effective_on", sa.Date(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("event_id", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("reverses_entry_id", sa.BigInteger(), nullable=True),
        sa.Column("posted_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "(kind = 'collection' AND event_id IS NOT NULL) OR (kind = 'run' AND run_id IS NOT NULL) OR (kind = 'reversal' AND reverses_entry_id IS NOT NULL)",
            name=op.f("ck_journal_entries_references_its_origin"),
        ),
        sa.CheckConstraint(
            "kind IN ('collection', 'run', 'reversal')", name=op.f("ck_journal_entries_kind_known")
        ),
        sa.ForeignKeyConstraint(
            ["reverses_entry_id"],
            ["journal_entries.id"],
            name=op.f("fk_journal_entries_reverses_entry_id_journal_entries"),
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_journal_entries_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_journal_entries")),
        sa.UniqueConstraint("event_id", name=op.f("uq_journal_entries_event_id")),
        sa.UniqueConstraint("reverses_entry_id", name=op.f("uq_journal_entries_reverses_entry_id")),
        sa.UniqueConstraint("run_id", name=op.f("uq_journal_entries_run_id")),
    )
    op.create_index(
        op.f("ix_journal_entries_effective_on"), "journal_entries", ["effective_on"], unique=False
    )
    op.create_index(
        op.f("ix_journal_entries_jurisdiction"), "journal_entries", ["jurisdiction"], unique=False
    )
    op.create_table(
        "collections",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("posting_id", sa.Text(), nullable=False),
        sa.Column("event_id", sa.Text(), nullable=False),
        sa.Column("payment_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("lodging_class", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("component", sa.Text(), nullable=False),
        sa.Column("amount", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("collected_on", sa.Date(), nullable=False),
        sa.Column("section", sa.Text(), nullable=False),
        sa.Column("entry_id", sa.BigInteger(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("amount <> 0", name=op.f("ck_collections_amount_nonzero")),
        sa.ForeignKeyConstraint(
            ["entry_id"], ["journal_entries.id"], name=op.f("fk_collections_entry_id_journal_entries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_collections")),
        sa.UniqueConstraint("event_id", name=op.f("uq_collections_event_id")),
        sa.UniqueConstraint("posting_id", name=op.f("uq_collections_posting_id")),
    )
    op.create_index(
        "ix_collections_jurisdiction_collected_on",
        "collections",
        ["jurisdiction", "collected_on"],
        unique=False,
    )
    op.create_index(op.f("ix_collections_payment_id"), "collections", ["payment_id"], unique=False)
    op.create_table(
        "journal_lines",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("entry_id", sa.BigInteger(), nullable=False),
        sa.Column("account_code", sa.Text(), nullable=False),
        sa.Column("amount", sa.Numeric(precision=18, scale=2), nullable=False),
        sa.Column("rule", sa.Text(), nullable=True),
        sa.Column("section", sa.Text(), nullable=True),
        sa.CheckConstraint("amount <> 0", name=op.f("ck_journal_lines_amount_nonzero")),
        sa.ForeignKeyConstraint(
            ["account_code"], ["accounts.code"], name=op.f("fk_journal_lines_account_code_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["entry_id"], ["journal_entries.id"], name=op.f("fk_journal_lines_entry_id_journal_entries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_journal_lines")),
    )
    op.create_index(op.f("ix_journal_lines_account_code"), "journal_lines", ["account_code"], unique=False)
    op.create_index(op.f("ix_journal_lines_entry_id"), "journal_lines", ["entry_id"], unique=False)
    op.create_table(
        "run_collections",
        sa.Column("collection_id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["collection_id"], ["collections.id"], name=op.f("fk_run_collections_collection_id_collections")
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_run_collections_run_id_runs")),
        sa.PrimaryKeyConstraint("collection_id", name=op.f("pk_run_collections")),
    )
    op.create_index(op.f("ix_run_collections_run_id"), "run_collections", ["run_id"], unique=False)
    for statement in LEDGER_RULES:
        op.execute(statement)


def downgrade() -> None:
    for statement in DROP_LEDGER_RULES:
        op.execute(statement)
    op.drop_index(op.f("ix_run_collections_run_id"), table_name="run_collections")
    op.drop_table("run_collections")
    op.drop_index(op.f("ix_journal_lines_entry_id"), table_name="journal_lines")
    op.drop_index(op.f("ix_journal_lines_account_code"), table_name="journal_lines")
    op.drop_table("journal_lines")
    op.drop_index("ix_collections_jurisdiction_collected_on", table_name="collections")
    op.drop_index(op.f("ix_collections_payment_id"), table_name="collections")
    op.drop_table("collections")
    op.drop_index(op.f("ix_journal_entries_jurisdiction"), table_name="journal_entries")
    op.drop_index(op.f("ix_journal_entries_effective_on"), table_name="journal_entries")
    op.drop_table("journal_entries")
    op.drop_table("runs")
    op.drop_table("certifications")
    op.drop_index(op.f("ix_accounts_jurisdiction"), table_name="accounts")
    op.drop_table("accounts")
    drop_chassis_tables()
