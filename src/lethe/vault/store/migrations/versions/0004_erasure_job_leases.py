"""erasure job leases: one runner at a time per job

A server's runner and a CLI ``lethe forget`` (or several servers) may advance the same
job. Steps are recorded once either way, but the steps outside a transaction (key
destruction, compaction) could run twice at once, and a second compaction finds nothing
left to sample for its byte scan. A runner now claims the job first.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 05:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("erasure_jobs") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("erasure_jobs") as batch:
        batch.drop_column("lease_until")
        batch.drop_column("lease_owner")
