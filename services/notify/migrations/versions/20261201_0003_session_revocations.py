"""session revocations: revoked_principals also holds ended sign-in sessions (servicekit.revocations)

Revision ID: 0003_session_revocations
Revises: 0002_traceparent
"""

from servicekit.revocations import allow_session_revocations as upgrade  # noqa: F401
from servicekit.revocations import disallow_session_revocations as downgrade  # noqa: F401

revision: str = "0003_session_revocations"
down_revision: str | None = "0002_traceparent"
