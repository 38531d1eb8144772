"""search postings: the primary key is their only B-tree (SQLite: WITHOUT ROWID)

``search_postings`` had three B-trees on SQLite: the rowid table, its primary key
(tenant, term hash, memory) and ``ix_search_postings_memory`` (tenant, memory, term hash),
each holding every posting: over a quarter of a store's bytes, and three B-trees to change
per posting on every write. The primary key serves every read: "postings of these terms"
is a range of it, "does this memory have a posting of these terms" a seek per term; a
memory's postings are now dropped by key, from the term hashes its ``search_index`` row
lists (``store.projection``). So the second index goes on both backends, and on SQLite the
table becomes its primary key alone.

On SQLite the table is copied in key order into its new form (the memory index is not
rebuilt); on PostgreSQL the index is dropped. Downgrade puts the old form back.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04 21:00:00.000000
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_COLUMNS = "tenant_id VARCHAR(64) NOT NULL, term_hash VARCHAR(64) NOT NULL, memory_id VARCHAR(36) NOT NULL"
_KEY = "PRIMARY KEY (tenant_id, term_hash, memory_id)"
_MEMORY_INDEX = ("ix_search_postings_memory", ["tenant_id", "memory_id", "term_hash"])


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(without_rowid=True)
    else:
        op.drop_index(_MEMORY_INDEX[0], table_name="search_postings")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(without_rowid=False)
    op.create_index(_MEMORY_INDEX[0], "search_postings", _MEMORY_INDEX[1])


def _rebuild(without_rowid: bool) -> None:
    """SQLite cannot change a table's rowid in place: a copy, in key order, takes its name."""
    suffix = " WITHOUT ROWID" if without_rowid else ""
    op.execute(f"CREATE TABLE search_postings_0018 ({_COLUMNS}, {_KEY}){suffix}")
    op.execute(
        "INSERT INTO search_postings_0018 (tenant_id, term_hash, memory_id) "
        "SELECT tenant_id, term_hash, memory_id FROM search_postings ORDER BY tenant_id, term_hash, memory_id"
    )
    op.execute("DROP TABLE search_postings")  # and its indexes
    op.execute("ALTER TABLE search_postings_0018 RENAME TO search_postings")
