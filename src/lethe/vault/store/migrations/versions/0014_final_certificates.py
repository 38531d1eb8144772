"""erasure_final_reports: the final certificate issued when a KMS's waiting window closes

A KMS that schedules key destruction (a waiting period, a soft-deleted key) makes the
first certificate say "scheduled"; when the window closes the runner issues a final
certificate, chained to the first by its SHA-256. One per job, beside ``erasure_reports``.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 08:40:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "erasure_final_reports",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("job_id", sa.String(36), nullable=False, unique=True),
        sa.Column("previous_report_id", sa.String(36), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("issued_at", sa.String(32), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("erasure_final_reports")
