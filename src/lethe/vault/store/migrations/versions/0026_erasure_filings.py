"""erasure filings (filed once) and the read fence's index

``erasure_filings`` holds, for 24 hours after a keyed filing, which request the key made, a
keyed fingerprint of what was asked, and the request's verification code sealed under a
key derived from the server's pepper (``vault.erasure.filings``). A retry within the window
returns the same request and code; the primary key (tenant, key) makes two concurrent
filings one. Rows past their window are deleted. Empty at first.

``ix_forgotten_subjects_pending`` (tenant, generation) finds a tenant's subjects whose erasure
is accepted and not yet tombstoned (generation 0): every scope read leaves them out
(``custody.read_fence``), in one indexed statement.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-07 15:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "erasure_filings",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=128), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("sealed_code", sa.LargeBinary(), nullable=False),
        sa.Column("filed_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "idempotency_key"),
    )
    op.create_index("ix_erasure_filings_expires", "erasure_filings", ["expires_at"])
    op.create_index("ix_forgotten_subjects_pending", "forgotten_subjects", ["tenant_id", "generation"])


def downgrade() -> None:
    op.drop_index("ix_forgotten_subjects_pending", table_name="forgotten_subjects")
    op.drop_index("ix_erasure_filings_expires", table_name="erasure_filings")
    op.drop_table("erasure_filings")
