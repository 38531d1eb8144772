"""scope change tokens: a search may keep a scope's ranking columns while its token holds

``scope_changes`` holds one token per agent scope (tenant, agent, purpose). Every event
that changes a memory of the scope, and every rebuild of the vectors, writes a fresh token
in its own transaction (``store.scope_changes``); a search reads the token first and uses
the scope it keeps in memory only while the token is the same. Existing scopes start with
the token of this migration: no process holds a scope read before it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03 12:40:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scope_changes",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("purpose", sa.String(length=64), nullable=False),
        sa.Column("token", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "agent_id", "purpose"),
    )
    op.execute(
        "INSERT INTO scope_changes (tenant_id, agent_id, purpose, token) "
        "SELECT DISTINCT tenant_id, agent_id, purpose, 'migration-0017' FROM memories"
    )


def downgrade() -> None:
    op.drop_table("scope_changes")
