"""erasure identifiers: the residue hunt's keyed term hashes, for the life of a request

``erasure_identifiers`` holds, per identifier of the subject an officer attached to an
erasure request (a name, an e-mail address, a phone or account number), the keyed term
hashes the search index posts for it (never the identifier), and what to do with other
subjects' memories that mention it (``retract`` or ``review``). Rows are deleted when the
request completes (``vault.erasure.residue``). Empty at first. PostgreSQL: tenant-walled
like the other tenant tables (migration 0024).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-07 18:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

APP_ROLE = "lethe_app"
TENANT = "current_setting('lethe.tenant', true)"


def upgrade() -> None:
    op.create_table(
        "erasure_identifiers",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("term_hashes", sa.Text(), nullable=False),
        sa.Column("residue", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "position"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE erasure_identifiers ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_wall ON erasure_identifiers TO {APP_ROLE} "
            f"USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP POLICY IF EXISTS tenant_wall ON erasure_identifiers")
    op.drop_table("erasure_identifiers")
