"""roots of completed audit-tree chunks, kept so a restarted server need not rehash the log

``merkle_chunk_roots`` holds the root of each completed chunk of ``chunk_size`` leaves
(256) below the latest signed checkpoint. Without it, the first checkpoint, proof or
certificate after a restart read and hashed every leaf of the log (tens of seconds at a
million events); with it, a few thousand rows. A cache only: a wrong root fails the next
consistency check against the signed checkpoints, and ``lethe audit verify`` recomputes
every stored root from the leaves.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-13 09:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "merkle_chunk_roots",
        sa.Column("chunk_size", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("chunk_index", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("root", sa.LargeBinary(length=32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("merkle_chunk_roots")
