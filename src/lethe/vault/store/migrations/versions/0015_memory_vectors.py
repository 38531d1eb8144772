"""sealed embeddings: one vector per memory, encrypted under its subject's data key

``memory_vectors`` holds each indexed memory's embedding as AES-256-GCM ciphertext under
the subject's data key (AAD: tenant, subject ref, memory id, version, model id), beside
the memory and dropped with its index entry. An existing store has none: semantic
recall covers a memory once ``lethe reindex`` embeds it (or it is written again).
``index_recipes`` records the embedder a rebuild used (model id and width).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-13 09:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_vectors",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.Column("key_generation", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "memory_id"),
    )
    op.create_index("ix_memory_vectors_subject", "memory_vectors", ["tenant_id", "subject_ref"])
    with op.batch_alter_table("index_recipes") as batch:
        batch.add_column(sa.Column("embedding_model", sa.String(length=128), nullable=True))
        batch.add_column(sa.Column("embedding_dims", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("index_recipes") as batch:
        batch.drop_column("embedding_dims")
        batch.drop_column("embedding_model")
    op.drop_index("ix_memory_vectors_subject", table_name="memory_vectors")
    op.drop_table("memory_vectors")
