"""tokens, erasure jobs, legal holds, checkpoints, reports, backups

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 10:40:43.802978
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=True),
        sa.Column("purposes", sa.Text(), nullable=False),
        sa.Column("description", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "backups",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("tree_size", sa.Integer(), nullable=False),
        sa.Column("location", sa.String(length=500), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "checkpoints",
        sa.Column("tree_size", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("root", sa.LargeBinary(length=32), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("signed_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("tree_size"),
    )
    op.create_table(
        "erasure_jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.Column("subject_commitment", sa.String(length=64), nullable=False),
        sa.Column("commitment_salt", sa.String(length=64), nullable=False),
        sa.Column("legal_basis", sa.String(length=64), nullable=False),
        sa.Column("reference", sa.String(length=200), nullable=True),
        sa.Column("requested_by", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.Column("due_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("completed_at", sa.DateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("report_id", sa.String(length=36), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("erasure_jobs", schema=None) as batch_op:
        batch_op.create_index("ix_erasure_jobs_status", ["status"], unique=False)
        batch_op.create_index("ix_erasure_jobs_subject", ["tenant_id", "subject_ref"], unique=False)

    op.create_table(
        "erasure_reports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("issued_at", sa.String(length=32), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id"),
    )
    op.create_table(
        "erasure_steps",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("step", sa.String(length=32), nullable=False),
        sa.Column("completed_at", sa.String(length=32), nullable=False),
        sa.Column("event_seq", sa.Integer(), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "step"),
    )
    op.create_table(
        "legal_holds",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("reference", sa.String(length=200), nullable=True),
        sa.Column("placed_by", sa.String(length=200), nullable=False),
        sa.Column("placed_at", sa.DateTime(), nullable=False),
        sa.Column("lifted_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("legal_holds", schema=None) as batch_op:
        batch_op.create_index("ix_legal_holds_subject", ["tenant_id", "subject_ref"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("legal_holds", schema=None) as batch_op:
        batch_op.drop_index("ix_legal_holds_subject")

    op.drop_table("legal_holds")
    op.drop_table("erasure_steps")
    op.drop_table("erasure_reports")
    with op.batch_alter_table("erasure_jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_erasure_jobs_subject")
        batch_op.drop_index("ix_erasure_jobs_status")

    op.drop_table("erasure_jobs")
    op.drop_table("checkpoints")
    op.drop_table("backups")
    op.drop_table("api_tokens")
