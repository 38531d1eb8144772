"""agent sessions: a session that read or wrote untrusted content taints its later writes

``agent_sessions`` holds the agents' tainted sessions, keyed by (tenant, agent, keyed hash of
the session id), with the taint's cause and when the session expires
(``memory.agent_sessions``). ``memories.session_taint`` records, on a write a tainted session
made, why it was quarantined (a cause code and ids, never content); NULL on every existing row.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 15:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_sessions",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("session_ref", sa.String(length=64), nullable=False),
        sa.Column("tainted_at", sa.DateTime(), nullable=False),
        sa.Column("taint_cause", sa.Text(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "agent_id", "session_ref"),
    )
    with op.batch_alter_table("memories") as batch:
        batch.add_column(sa.Column("session_taint", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("memories") as batch:
        batch.drop_column("session_taint")
    op.drop_table("agent_sessions")
