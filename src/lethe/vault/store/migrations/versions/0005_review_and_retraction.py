"""review queue order, review decisions, the retraction ledger

``memories.created_seq``: the sequence number of the event that created the memory. The
review queue pages over it: it is assigned under the write lock, so a memory created
after a page was read always sorts after it (``created_at`` comes from a clock, and two
servers' clocks, or two writes in one microsecond, could put a new memory behind the
cursor). Existing rows get the seq of their first ``memory.written`` event.

``review_decisions``: the first result of each promote or reject sent with an
idempotency key, so a retry returns it. ``retractions``: the ledger of retractions, which
a backup restore re-applies. Both are projections of the event log.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 09:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("created_seq", sa.BigInteger(), nullable=True))
    op.execute(
        "UPDATE memories SET created_seq = coalesce((SELECT min(e.seq) FROM events e "
        "WHERE e.tenant_id = memories.tenant_id AND e.memory_id = memories.id "
        "AND e.type = 'memory.written'), 0)"
    )
    with op.batch_alter_table("memories") as batch:
        batch.alter_column("created_seq", existing_type=sa.BigInteger(), nullable=False)
    op.create_index("ix_memories_review", "memories", ["tenant_id", "status", "created_seq"])
    op.create_table(
        "review_decisions",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("principal", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("sealed_version", sa.Integer(), nullable=False),
        sa.Column("key_generation", sa.Integer(), nullable=False),
        sa.Column("decided_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "principal", "key"),
    )
    op.create_table(
        "retractions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("requested_by", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=True),
        sa.Column("source_ref", sa.String(length=512), nullable=True),
        sa.Column("memory_ids", sa.Text(), nullable=False),
        sa.Column("derived_ids", sa.Text(), nullable=False),
        sa.Column("retracted_at", sa.String(length=32), nullable=False),
        sa.Column("event_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_retractions_tenant", "retractions", ["tenant_id"])


def downgrade() -> None:
    op.drop_index("ix_retractions_tenant", table_name="retractions")
    op.drop_table("retractions")
    op.drop_table("review_decisions")
    op.drop_index("ix_memories_review", table_name="memories")
    with op.batch_alter_table("memories") as batch:
        batch.drop_column("created_seq")
