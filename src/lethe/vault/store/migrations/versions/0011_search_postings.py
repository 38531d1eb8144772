"""an inverted index for search: one posting per (tenant, keyed term hash, memory)

Search scored a memory by matching each query term's hash against the memory's
space-separated term list with LIKE: no index could serve it, so the cost was scope times
terms of substring scans. ``search_postings`` holds the same hashes one per row, keyed
(tenant_id, term_hash, memory_id), with a second index by memory; a query now costs one
index seek per query term and scored memory. The postings of an existing store are
written from ``search_index.terms``, which stays the per-memory record the rebuild check
compares.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-13 08:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

PAGE = 1000


def upgrade() -> None:
    postings = op.create_table(
        "search_postings",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("term_hash", sa.String(length=64), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "term_hash", "memory_id"),
    )
    op.create_index("ix_search_postings_memory", "search_postings", ["tenant_id", "memory_id", "term_hash"])
    index = sa.table("search_index", sa.column("tenant_id"), sa.column("memory_id"), sa.column("terms"))
    conn = op.get_bind()
    after = ("", "")
    while True:
        page = conn.execute(
            sa.select(index.c.tenant_id, index.c.memory_id, index.c.terms)
            .where(sa.tuple_(index.c.tenant_id, index.c.memory_id) > sa.tuple_(*after))
            .order_by(index.c.tenant_id, index.c.memory_id)
            .limit(PAGE)
        ).all()
        if not page:
            return
        rows = [
            {"tenant_id": r.tenant_id, "term_hash": h, "memory_id": r.memory_id}
            for r in page
            for h in set(r.terms.split())
        ]
        if rows:
            conn.execute(postings.insert(), rows)
        after = (page[-1].tenant_id, page[-1].memory_id)


def downgrade() -> None:
    op.drop_index("ix_search_postings_memory", table_name="search_postings")
    op.drop_table("search_postings")
