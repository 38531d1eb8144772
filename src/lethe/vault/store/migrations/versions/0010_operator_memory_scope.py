"""operator memories join every agent's search of their purpose: an index for that branch

An agent's search reads its own memories *or* the tenant's operator memories of the
purpose (``memory.visibility``). ``ix_memories_scope`` serves the first branch; this
index serves the second, so the cost of a search still follows its scope, not the store.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-12 10:00:00.000000
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_memories_authority", "memories", ["tenant_id", "authority", "purpose", "status", "expires_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_memories_authority", table_name="memories")
