"""console one-time values: a verification code shown once after the filing's redirect

The console files an erasure request with a POST and answers 303 to the request page
(POST-redirect-GET), which shows the request's verification code once. Between the two
the code is held here, keyed by the SHA-256 of the console session id and the request id,
sealed under a key derived from the session id (which only the browser's cookie holds),
and deleted when first shown or when it expires (``vault.access.one_time``). In the
database, not a process, so any node or worker serves the redirect.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 15:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_one_time",
        sa.Column("session_hash", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("session_hash", "name"),
    )


def downgrade() -> None:
    op.drop_table("console_one_time")
