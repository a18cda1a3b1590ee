"""payment plans: plans, their installments, taxpayers' requests and the steps of both

Revision ID: 0007_plans
Revises: 0006_case_work
Create Date: 2026-12-02 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from servicekit.migrations import MONEY, created_at_column, sequence_column

revision: str = "0007_plans"
down_revision: str | None = "0006_case_work"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "payment_plans",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("periods", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("balance_as_of", sa.Date(), nullable=False),
        sa.Column("planned_amount", MONEY, nullable=False),
        sa.Column("granted_on", sa.Date(), nullable=False),
        sa.Column("granted_by", sa.Text(), nullable=False),
        sa.Column("request_id", sa.Text(), nullable=True),
        sa.Column("grace_days", sa.Integer(), nullable=False),
        sa.Column("section", sa.Text(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.CheckConstraint("planned_amount > 0", name=op.f("ck_payment_plans_amount_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payment_plans")),
        sa.UniqueConstraint("request_id", name=op.f("uq_payment_plans_request_id")),
    )
    op.create_index(op.f("ix_payment_plans_tax_account"), "payment_plans", ["tax_account"])
    op.create_table(
        "plan_installments",
        sa.Column("plan_id", sa.Text(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("due_on", sa.Date(), nullable=False),
        sa.Column("amount", MONEY, nullable=False),
        sa.CheckConstraint("amount > 0", name=op.f("ck_plan_installments_amount_positive")),
        sa.PrimaryKeyConstraint("plan_id", "number", name=op.f("pk_plan_installments")),
    )
    op.create_table(
        "plan_requests",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("jurisdiction", sa.Text(), nullable=False),
        sa.Column("installments", sa.Integer(), nullable=False),
        sa.Column("explanation", sa.Text(), nullable=False),
        sa.Column("requested_on", sa.Date(), nullable=False),
        sa.Column("requested_by", sa.Text(), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plan_requests")),
    )
    op.create_index(op.f("ix_plan_requests_tax_account"), "plan_requests", ["tax_account"])
    op.create_table(
        "plan_steps",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("subject_id", sa.Text(), nullable=False),
        sa.Column("tax_account", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("step", sa.Text(), nullable=False),
        sa.Column("on", sa.Date(), nullable=False),
        sa.Column("by", sa.Text(), nullable=False),
        sa.Column("details", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        created_at_column(),
        sequence_column("casework_seq"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plan_steps")),
        sa.UniqueConstraint("subject_id", "key", name=op.f("uq_plan_steps_subject_id")),
    )
    op.create_index(op.f("ix_plan_steps_tax_account"), "plan_steps", ["tax_account"])


def downgrade() -> None:
    op.drop_table("plan_steps")
    op.drop_table("plan_requests")
    op.drop_table("plan_installments")
    op.drop_table("payment_plans")
