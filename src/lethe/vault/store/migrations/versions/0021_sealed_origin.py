"""sealed origin: the retraction ledger names a source by its keyed hash

A memory's origin (provenance ``source_ref``, ``turn``, ``tool``, ``url``, ``document_ref``)
is sealed with its content from this release on, and found by source through a keyed hash
posted in the search index: neither needs a column. The retraction ledger gains
``source_hash``, the keyed hash a retraction by source records instead of the source ref
(``retractions.source_ref`` stays for entries recorded before, as their events hold it).

Nothing is re-sealed here: a migration has no KMS, and the ``memory.written`` events of
memories written before hold their source ref in clear in bytes the audit tree commits to
(rewriting them would break every checkpoint and proof issued). docs/erasure-semantics.md
says what remains of them.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 15:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("retractions") as batch:
        batch.add_column(sa.Column("source_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("retractions") as batch:
        batch.drop_column("source_hash")
