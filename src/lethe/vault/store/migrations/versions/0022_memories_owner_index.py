"""an agent's own memories, newest first, from one index: ``ix_memories_owner``

``POST /v1/memories/list`` pages through the calling agent's memories by ``created_seq``
(keyset). Without an index in that order each page read and sorted every memory of the
agent: 25-50 ms a page for an agent of 10,000 memories (SQLite and PostgreSQL, measured
here), and listing all of them grew with the square of their number. The index (tenant,
agent, creation sequence) gives each page one backward range scan that stops after the
page: 0.3 ms on SQLite, ~2 ms on PostgreSQL, whatever the agent holds. A write adds one
entry at the end of its agent's range (no measurable cost next to a write's other work).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07 15:00:00.000000
"""

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_memories_owner", "memories", ["tenant_id", "agent_id", "created_seq"])


def downgrade() -> None:
    op.drop_index("ix_memories_owner", table_name="memories")
