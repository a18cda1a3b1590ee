"""session revocations: revoked_principals also holds ended sign-in sessions (servicekit.revocations)

Revision ID: 0011_session_revocations
Revises: 0010_crosschecks_audits
"""

from servicekit.revocations import allow_session_revocations as upgrade  # noqa: F401
from servicekit.revocations import disallow_session_revocations as downgrade  # noqa: F401

revision: str = "0011_session_revocations"
down_revision: str | None = "0010_crosschecks_audits"
