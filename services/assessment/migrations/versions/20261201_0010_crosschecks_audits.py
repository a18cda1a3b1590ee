"""cross-checks (runs, findings) and audits (scope, steps)

Revision ID: 0010_crosschecks_audits
Revises: 0009_lodging_documents
Create Date: 2026-12-02 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from servicekit.migrations import MONEY, created_at_column, sequence_column

revision: str = "0010_crosschecks_audits"
down_revision: str | None = "0009_lodging_documents"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "crosscheck_runs",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("declaration_id", sa.Text(), nullable=False),
        sa.Column("intermediary_declarations", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("intermediaries_key", sa.Text(), nullable=False),
        sa.Column("checked_on", sa.Date(), nullable=False),
        sa.Column("findings", sa.Integer(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_crosscheck_runs")),
        sa.UniqueConstraint(
            "declaration_id",
            "intermediaries_key",
            name=op.f("uq_crosscheck_runs_declaration_id_intermediaries_key"),
        ),
    )
    op.create_index(op.f("ix_crosscheck_runs_tax_account"), "crosscheck_runs", ["tax_account"])
    op.create_index(op.f("ix_crosscheck_runs_declaration_id"), "crosscheck_runs", ["declaration_id"])
    op.create_table(
        "crosscheck_findings",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("declaration_id", sa.Text(), nullable=False),
        sa.Column("rule", sa.Text(), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("declared", MONEY, nullable=False),
        sa.Column("reported", MONEY, nullable=False),
        sa.Column("difference", MONEY, nullable=False),
        sa.Column("section", sa.Text(), nullable=False),
        sa.Column("parameters", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["crosscheck_runs.id"], name=op.f("fk_crosscheck_findings_run_id_crosscheck_runs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_crosscheck_findings")),
    )
    for col in ("run_id", "tax_account", "declaration_id"):
        op.create_index(op.f(f"ix_crosscheck_findings_{col}"), "crosscheck_findings", [col])
    op.create_table(
        "audits",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("periods", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("opened_on", sa.Date(), nullable=False),
        sa.Column("opened_by", sa.Text(), nullable=False),
        sa.Column("section", sa.Text(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audits")),
    )
    op.create_index(op.f("ix_audits_tax_account"), "audits", ["tax_account"])
    op.create_table(
        "audit_steps",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("audit_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=True),
        sa.Column("data", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("recorded_on", sa.Date(), nullable=False),
        sa.Column("recorded_by", sa.Text(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.ForeignKeyConstraint(["audit_id"], ["audits.id"], name=op.f("fk_audit_steps_audit_id_audits")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_steps")),
    )
    op.create_index(op.f("ix_audit_steps_audit_id"), "audit_steps", ["audit_id"])


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    for table in ("audit_steps", "audits", "crosscheck_findings", "crosscheck_runs"):
        op.drop_table(table)
