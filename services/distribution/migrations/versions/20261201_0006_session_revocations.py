"""session revocations: revoked_principals also holds ended sign-in sessions (servicekit.revocations)

Revision ID: 0006_session_revocations
Revises: 0005_traceparent
"""

from servicekit.revocations import allow_session_revocations as upgrade  # noqa: F401
from servicekit.revocations import disallow_session_revocations as downgrade  # noqa: F401

revision: str = "0006_session_revocations"
down_revision: str | None = "0005_traceparent"
