"""OpenID Connect: people bound to the provider's subject; used nonces until their token expires

Revision ID: 0009_oidc_identities
Revises: 0008_session_revocations
Create Date: 2026-12-02 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from servicekit.migrations import created_at_column

revision: str = "0009_oidc_identities"
down_revision: str | None = "0008_session_revocations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("SET LOCAL lock_timeout = '5s'")
    op.create_table(
        "oidc_identities",
        sa.Column("issuer", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("bound_by_claim", sa.Text(), nullable=False),
        created_at_column(),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_oidc_identities_user_id_users")),
        sa.PrimaryKeyConstraint("issuer", "subject", name=op.f("pk_oidc_identities")),
        sa.UniqueConstraint("issuer", "user_id", name="uq_oidc_identities_issuer_user_id"),
    )
    op.create_table(
        "oidc_used_nonces",
        sa.Column("issuer", sa.Text(), nullable=False),
        sa.Column("nonce_hash", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        created_at_column(),
        sa.PrimaryKeyConstraint("issuer", "nonce_hash", name=op.f("pk_oidc_used_nonces")),
    )
    op.create_index(op.f("ix_oidc_used_nonces_expires_at"), "oidc_used_nonces", ["expires_at"])


def downgrade() -> None:
    op.drop_table("oidc_used_nonces")
    op.drop_table("oidc_identities")
