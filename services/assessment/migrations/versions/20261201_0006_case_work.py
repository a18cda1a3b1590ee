"""case work: adjustment facts, maker-checker proposals, cases, abatements, facilitator authorizations

Revision ID: 0006_case_work
Revises: 0005_job_runs
Create Date: 2026-12-01 09:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from servicekit.migrations import MONEY, created_at_column, sequence_column

revision: str = "0006_case_work"
down_revision: str | None = "0005_job_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.execute("CREATE SEQUENCE casework_seq")
    op.create_table(
        "adjustment_facts",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("component", sa.Text(), nullable=True),
        sa.Column("amount", MONEY, nullable=True),
        sa.Column("effective_on", sa.Date(), nullable=False),
        sa.Column("section", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("proposed_by", sa.Text(), nullable=True),
        sa.Column("approved_by", sa.Text(), nullable=False),
        sa.Column("source_kind", sa.Text(), nullable=False),
        sa.Column("source_id", sa.Text(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.CheckConstraint(
            "amount IS NULL OR amount >= 0", name=op.f("ck_adjustment_facts_amount_not_negative")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adjustment_facts")),
        sa.UniqueConstraint(
            "source_kind",
            "source_id",
            "period",
            "kind",
            "component",
            name=op.f("uq_adjustment_facts_source_kind"),
            postgresql_nulls_not_distinct=True,
        ),
    )
    op.create_index(op.f("ix_adjustment_facts_tax_account"), "adjustment_facts", ["tax_account"])
    op.create_table(
        "adjustment_reversals",
        sa.Column("fact_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("reversed_on", sa.Date(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("proposed_by", sa.Text(), nullable=True),
        sa.Column("approved_by", sa.Text(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("fact_id", name=op.f("pk_adjustment_reversals")),
    )
    op.create_index(op.f("ix_adjustment_reversals_tax_account"), "adjustment_reversals", ["tax_account"])
    op.create_table(
        "proposals",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=True),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("subject_id", sa.Text(), nullable=False),
        sa.Column("amount", MONEY, nullable=False),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("proposed_by", sa.Text(), nullable=False),
        sa.Column("proposed_role", sa.Text(), nullable=False),
        sa.Column("proposed_on", sa.Date(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.CheckConstraint("amount >= 0", name=op.f("ck_proposals_amount_not_negative")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_proposals")),
    )
    op.create_index(op.f("ix_proposals_tax_account"), "proposals", ["tax_account"])
    op.create_index(op.f("ix_proposals_subject_id"), "proposals", ["subject_id"])
    op.create_table(
        "proposal_reviews",
        sa.Column("proposal_id", sa.Text(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("reviewed_by", sa.Text(), nullable=False),
        sa.Column("reviewed_role", sa.Text(), nullable=False),
        sa.Column("reviewed_on", sa.Date(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("proposal_id", name=op.f("pk_proposal_reviews")),
    )
    op.create_table(
        "cases",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("notice_id", sa.Text(), nullable=False),
        sa.Column("response_id", sa.Text(), nullable=False),
        sa.Column("disputed_amount", MONEY, nullable=False),
        sa.Column("opened_on", sa.Date(), nullable=False),
        sa.Column("opened_by", sa.Text(), nullable=False),
        created_at_column(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cases")),
        sa.UniqueConstraint("notice_id", name=op.f("uq_cases_notice_id")),
        sa.UniqueConstraint("response_id", name=op.f("uq_cases_response_id")),
    )
    op.create_index(op.f("ix_cases_tax_account"), "cases", ["tax_account"])
    op.create_table(
        "case_steps",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("case_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("step", sa.Text(), nullable=False),
        sa.Column("on", sa.Date(), nullable=False),
        sa.Column("by", sa.Text(), nullable=False),
        sa.Column("details", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_case_steps")),
    )
    op.create_index("ix_case_steps_case", "case_steps", ["case_id", "seq"])
    op.create_index(op.f("ix_case_steps_tax_account"), "case_steps", ["tax_account"])
    op.create_table(
        "abatement_requests",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("period", sa.Text(), nullable=False),
        sa.Column("component", sa.Text(), nullable=False),
        sa.Column("amount", MONEY, nullable=False),
        sa.Column("ground", sa.Text(), nullable=False),
        sa.Column("explanation", sa.Text(), nullable=False),
        sa.Column("requested_on", sa.Date(), nullable=False),
        sa.Column("requested_by", sa.Text(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.CheckConstraint("amount > 0", name=op.f("ck_abatement_requests_amount_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_abatement_requests")),
    )
    op.create_index(op.f("ix_abatement_requests_tax_account"), "abatement_requests", ["tax_account"])
    op.create_table(
        "abatement_decisions",
        sa.Column("abatement_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("amount", MONEY, nullable=False),
        sa.Column("reasons", sa.Text(), nullable=False),
        sa.Column("decided_on", sa.Date(), nullable=False),
        sa.Column("decided_by", sa.Text(), nullable=False),
        sa.Column("proposed_by", sa.Text(), nullable=True),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("abatement_id", name=op.f("pk_abatement_decisions")),
    )
    op.create_index(op.f("ix_abatement_decisions_tax_account"), "abatement_decisions", ["tax_account"])
    op.create_table(
        "refund_steps",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("refund_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("step", sa.Text(), nullable=False),
        sa.Column("on", sa.Date(), nullable=False),
        sa.Column("by", sa.Text(), nullable=False),
        sa.Column("details", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refund_steps")),
    )
    op.create_index(op.f("ix_refund_steps_refund_id"), "refund_steps", ["refund_id"])
    op.create_index(op.f("ix_refund_steps_tax_account"), "refund_steps", ["tax_account"])
    op.create_index("uq_refund_steps_final", "refund_steps", ["refund_id", "step"], unique=True)
    op.create_table(
        "facilitator_authorizations",
        sa.Column("authorization_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("facilitator_id", sa.Text(), nullable=False),
        sa.Column("starts_on", sa.Date(), nullable=False),
        sa.Column("ends_on", sa.Date(), nullable=True),
        sa.Column("ended", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("authorization_id", name=op.f("pk_facilitator_authorizations")),
    )
    op.create_index(
        op.f("ix_facilitator_authorizations_tax_account"), "facilitator_authorizations", ["tax_account"]
    )
    op.create_index(
        op.f("ix_facilitator_authorizations_facilitator_id"), "facilitator_authorizations", ["facilitator_id"]
    )


def downgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    for table in (
        "facilitator_authorizations",
        "refund_steps",
        "abatement_decisions",
        "abatement_requests",
        "case_steps",
        "cases",
        "proposal_reviews",
        "proposals",
        "adjustment_reversals",
        "adjustment_facts",
    ):
        op.drop_table(table)
    op.execute("DROP SEQUENCE casework_seq")
