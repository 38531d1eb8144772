"""scheduled turns: a server job that reads the whole store runs once per interval

``scheduled_turns`` holds, for each periodic job of the servers (the expiry sweep, the
scheduled compaction), when a worker last took its turn (``store.turns``). Every worker of
every node still wakes at its own moment, but runs the job only if no other did within the
interval. Empty at first: the first worker to wake runs each job.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 03:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scheduled_turns",
        sa.Column("job", sa.String(length=64), nullable=False),
        sa.Column("taken_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("job"),
    )


def downgrade() -> None:
    op.drop_table("scheduled_turns")
