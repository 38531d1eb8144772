"""the search index's recipe, and no index entries for memories that cannot come back

``index_recipes``: one row per derived index naming how it was built (tokeniser and
term-hash function, each with a version) and when ``lethe reindex`` last rebuilt it
(``built_at`` NULL: built write by write, never rebuilt). The search index of an existing
store was built by the first recipe, which the row records.

Index entries of superseded and expired memories are dropped: no event brings such a
memory back to retrieval, and the index now holds only active and quarantined memories
(the ones a rebuild indexes), so a live index and a rebuilt one compare equal.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-12 09:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "index_recipes",
        sa.Column("name", sa.String(length=64), primary_key=True),
        sa.Column("tokeniser", sa.String(length=64), nullable=False),
        sa.Column("tokeniser_version", sa.Integer(), nullable=False),
        sa.Column("term_hash", sa.String(length=64), nullable=False),
        sa.Column("term_hash_version", sa.Integer(), nullable=False),
        sa.Column("entries", sa.BigInteger(), nullable=True),
        sa.Column("built_at", sa.String(length=32), nullable=True),
    )
    op.bulk_insert(
        table,
        [
            {
                "name": "search_index",
                "tokeniser": "nfc-lower-unicode-words-min2",
                "tokeniser_version": 1,
                "term_hash": "hmac-sha256-tenant-terms-hex16",
                "term_hash_version": 1,
                "entries": None,
                "built_at": None,
            }
        ],
    )
    op.execute(
        "DELETE FROM search_index WHERE EXISTS (SELECT 1 FROM memories m "
        "WHERE m.tenant_id = search_index.tenant_id AND m.id = search_index.memory_id "
        "AND m.status NOT IN ('active', 'quarantined'))"
    )


def downgrade() -> None:
    op.drop_table("index_recipes")
