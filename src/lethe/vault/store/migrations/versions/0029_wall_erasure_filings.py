"""row-level security for erasure filings: the tenant wall on the table 0026 added

PostgreSQL only (nothing changes on SQLite). ``erasure_filings`` (migration 0026) holds a
tenant's keyed filings and their sealed verification codes; it came after the wall
(0024), so ``lethe_app`` could read and write it (default privileges) but no policy bound
it. It gets Row-Level Security and the same ``tenant_wall`` policy as every tenant-scoped
table: a row is seen, changed or inserted only if its ``tenant_id`` is the transaction's
``lethe.tenant`` setting. ``console_one_time`` (0025) has no tenant column (a row is found
by the hash of a console session id and opened by a key derived from it) and stays
store-wide (``store.tenancy.STORE_WIDE_TABLES``).

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07 18:00:00.000000
"""

from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

APP_ROLE = "lethe_app"
TENANT = "current_setting('lethe.tenant', true)"
TABLE = "erasure_filings"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_wall ON {TABLE} TO {APP_ROLE} "
        f"USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP POLICY IF EXISTS tenant_wall ON {TABLE}")
    op.execute(f"ALTER TABLE {TABLE} DISABLE ROW LEVEL SECURITY")
