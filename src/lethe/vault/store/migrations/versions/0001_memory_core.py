"""memory core: events, projection, subject keys

Revision ID: 0001
Revises:
Create Date: 2026-11-30 10:38:04.322582
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "events",
        sa.Column(
            "seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=False, nullable=False
        ),
        sa.Column("event_id", sa.String(length=36), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=True),
        sa.Column("subject_ref", sa.String(length=64), nullable=True),
        sa.Column("occurred_at", sa.String(length=32), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("ciphertext_digest", sa.String(length=64), nullable=True),
        sa.Column("leaf_hash", sa.LargeBinary(length=32), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("event_id"),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_memory", ["memory_id"], unique=False)
        batch_op.create_index("ix_events_subject", ["tenant_id", "subject_ref"], unique=False)

    op.create_table(
        "forgotten_subjects",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.Column("forgotten_at", sa.String(length=32), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(length=36), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "subject_ref"),
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "agent_id", "key"),
    )
    op.create_table(
        "memories",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.Column("purpose", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("sealed_version", sa.Integer(), nullable=False),
        sa.Column("key_generation", sa.Integer(), nullable=False),
        sa.Column("content_hmac", sa.String(length=64), nullable=False),
        sa.Column("token_estimate", sa.Integer(), nullable=False),
        sa.Column("provenance", sa.Text(), nullable=False),
        sa.Column("authority", sa.String(length=16), nullable=False),
        sa.Column("trust", sa.String(length=16), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("supersedes_id", sa.String(length=36), nullable=True),
        sa.Column("superseded_by", sa.String(length=36), nullable=True),
        sa.Column("idempotency_key", sa.String(length=128), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.create_index(
            "ix_memories_scope", ["tenant_id", "agent_id", "purpose", "status", "expires_at"], unique=False
        )
        batch_op.create_index("ix_memories_subject", ["tenant_id", "subject_ref"], unique=False)

    op.create_table(
        "search_index",
        sa.Column("memory_id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("memory_id"),
    )
    with op.batch_alter_table("search_index", schema=None) as batch_op:
        batch_op.create_index("ix_search_index_subject", ["tenant_id", "subject_ref"], unique=False)

    op.create_table(
        "subject_keys",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("key_name", sa.String(length=200), nullable=False),
        sa.Column("backend", sa.String(length=16), nullable=False),
        sa.Column("wrapped_dek", sa.LargeBinary(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("destroyed_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "subject_ref", "generation"),
        sa.UniqueConstraint("key_name"),
    )


def downgrade() -> None:

    op.drop_table("subject_keys")
    with op.batch_alter_table("search_index", schema=None) as batch_op:
        batch_op.drop_index("ix_search_index_subject")

    op.drop_table("search_index")
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.drop_index("ix_memories_subject")
        batch_op.drop_index("ix_memories_scope")

    op.drop_table("memories")
    op.drop_table("idempotency_keys")
    op.drop_table("forgotten_subjects")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_subject")
        batch_op.drop_index("ix_events_memory")

    op.drop_table("events")
