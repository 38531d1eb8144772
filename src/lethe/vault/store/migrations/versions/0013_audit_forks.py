"""audit_forks: where a restore forked the audit log, kept across later restores

Restoring an older backup abandons the events logged after it; the new events take
their sequence numbers, so the log forks. ``audit_forks`` records each fork (the common
prefix, the abandoned branch's size and its signed checkpoints) and the erasures the
restore re-applied, so auditors can see both.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 08:15:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_forks",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("backup_id", sa.String(36), nullable=False),
        sa.Column("restored_at", sa.String(32), nullable=False),
        sa.Column("fork_tree_size", sa.Integer(), nullable=False),
        sa.Column("abandoned_tree_size", sa.Integer(), nullable=False),
        sa.Column("abandoned_checkpoints", sa.Text(), nullable=False),
        sa.Column("reapplied", sa.Text(), nullable=False),
        sa.Column("event_seq", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("audit_forks")
