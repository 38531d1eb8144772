"""console sessions

The web console exchanges a Lethe token for a session. Sessions live in the database so
that any node of a multi-node deployment serves the next request of a signed-in person;
a row holds the SHA-256 of the session id (never the id), the token it stands for, and
the times that decide its idle and absolute expiry.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 08:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id_hash"),
    )
    op.create_index("ix_console_sessions_token_id", "console_sessions", ["token_id"])


def downgrade() -> None:
    op.drop_index("ix_console_sessions_token_id", table_name="console_sessions")
    op.drop_table("console_sessions")
