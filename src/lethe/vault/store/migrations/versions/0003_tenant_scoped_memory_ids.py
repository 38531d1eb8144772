"""memory identity is (tenant_id, id): tenant-scoped primary keys for memories and search_index

A globally unique memory id let a tenant learn which ids exist in other tenants (a
create under a taken id was refused). The primary keys of ``memories`` and
``search_index`` now lead with ``tenant_id``. SQLite cannot alter a primary key, so
those tables are rebuilt (batch mode, rows and indexes copied); PostgreSQL drops and
re-adds the constraint under the name it had.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 09:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# table -> (primary key before, primary key after)
_KEYS = {
    "memories": (["id"], ["tenant_id", "id"]),
    "search_index": (["memory_id"], ["tenant_id", "memory_id"]),
}


def _rekeyed(bind: sa.engine.Connection, table: str, columns: list[str]) -> sa.Table:
    """The table as it is, but for its primary key (for SQLite's rebuild: no column may
    keep a stale ``primary_key`` flag, which SQLAlchemy warns may become an error)."""
    old = sa.Table(table, sa.MetaData(), autoload_with=bind)
    new = sa.Table(
        table,
        sa.MetaData(),
        *[sa.Column(c.name, c.type, nullable=c.nullable) for c in old.columns],
        sa.PrimaryKeyConstraint(*columns, name=f"{table}_pkey"),
    )
    for index in old.indexes:
        sa.Index(index.name, *[new.c[c.name] for c in index.columns], unique=index.unique)
    return new


def _rekey(table: str, columns: list[str]) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        # SQLite cannot alter a primary key: rebuild the table, copying rows and indexes.
        with op.batch_alter_table(table, recreate="always", copy_from=_rekeyed(bind, table, columns)):
            pass
        return
    name = sa.inspect(bind).get_pk_constraint(table)["name"] or f"{table}_pkey"
    op.drop_constraint(name, table, type_="primary")
    op.create_primary_key(name, table, columns)


def upgrade() -> None:
    for table, (_, after) in _KEYS.items():
        _rekey(table, after)


def downgrade() -> None:
    """Fails if two tenants already share a memory id: that data has no single-tenant form."""
    for table, (before, _) in _KEYS.items():
        _rekey(table, before)
