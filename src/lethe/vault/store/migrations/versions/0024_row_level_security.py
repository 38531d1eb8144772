"""row-level security: a tenant wall in PostgreSQL behind the application's WHERE clauses

PostgreSQL only (SQLite has no second barrier; nothing changes there). Creates the
application role ``lethe_app`` if the cluster lacks it (roles are cluster-wide: another
database's migration may have made it; NOLOGIN, no superuser, no BYPASSRLS), grants it to
the connecting user (who ``SET ROLE``s to it) and gives it the rights to read and write
every table and sequence of this schema, now and those later migrations create, but owns
none of them. Every tenant-scoped table (``store.tenancy.TENANT_TABLES``) gets Row-Level
Security and a policy ``tenant_wall`` for ``lethe_app``: a row is seen, updated, deleted or
inserted only if its ``tenant_id`` is the transaction's ``lethe.tenant`` setting; the
erasure steps and extensions (``JOB_TABLES``) are seen when their job is. The tables'
owner, the connecting user, is not bound (no ``FORCE``): it is the maintenance path
(migrations, the erasure runner, sweep, compaction, replay, backup). The function
``lethe_token_by_hash`` (SECURITY DEFINER, owned by the tables' owner) finds a bearer
token's row before its tenant is known.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07 15:00:00.000000
"""

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

APP_ROLE = "lethe_app"
TENANT = "current_setting('lethe.tenant', true)"
# As in store.tenancy (a migration states its own schema, never the code's of the day).
TENANT_TABLES = (
    "memories",
    "search_index",
    "search_postings",
    "memory_vectors",
    "scope_changes",
    "idempotency_keys",
    "forgotten_subjects",
    "subject_keys",
    "review_decisions",
    "retractions",
    "api_tokens",
    "erasure_jobs",
    "legal_holds",
    "erasure_reports",
    "erasure_final_reports",
    "console_sessions",
    "agent_sessions",
)
JOB_TABLES = ("erasure_steps", "erasure_extensions")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # Roles are the cluster's, not the database's: a second store migrating on the same cluster
    # at the same moment (two vaults, two test workers) waits on the first one's uncommitted role,
    # then gets a duplicate; it then uses the role the first one made.
    op.execute(
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                BEGIN
                    CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOINHERIT NOBYPASSRLS;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
                END;
            END IF;
        END $$"""  # noqa: S608 (constants only)
    )
    op.execute(  # a role an administrator created and granted beforehand needs no CREATEROLE here
        f"""DO $$ BEGIN
            IF NOT pg_has_role(current_user, '{APP_ROLE}', 'MEMBER') THEN
                BEGIN
                    GRANT {APP_ROLE} TO CURRENT_USER;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
                END;
            END IF;
        END $$"""
    )
    op.execute(f"GRANT USAGE ON SCHEMA {_schema()} TO {APP_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {_schema()} TO {APP_ROLE}")
    op.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {_schema()} TO {APP_ROLE}")
    defaults = f"ALTER DEFAULT PRIVILEGES IN SCHEMA {_schema()} GRANT"
    op.execute(f"{defaults} SELECT, INSERT, UPDATE, DELETE ON TABLES TO {APP_ROLE}")
    op.execute(f"{defaults} USAGE, SELECT, UPDATE ON SEQUENCES TO {APP_ROLE}")
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_wall ON {table} TO {APP_ROLE} "
            f"USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
        )
    for table in JOB_TABLES:
        own_job = f"EXISTS (SELECT 1 FROM erasure_jobs j WHERE j.id = {table}.job_id)"  # noqa: S608
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_wall ON {table} TO {APP_ROLE} USING ({own_job}) WITH CHECK ({own_job})"
        )
    op.execute(
        """CREATE FUNCTION lethe_token_by_hash(digest text) RETURNS SETOF api_tokens
           LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
           AS $$ SELECT * FROM api_tokens WHERE token_hash = digest $$"""
    )
    op.execute("REVOKE ALL ON FUNCTION lethe_token_by_hash(text) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION lethe_token_by_hash(text) TO {APP_ROLE}")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION IF EXISTS lethe_token_by_hash(text)")
    for table in TENANT_TABLES + JOB_TABLES:
        op.execute(f"DROP POLICY IF EXISTS tenant_wall ON {table}")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    # The role is the cluster's (other databases may use it): only this schema's grants go.
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA {_schema()} REVOKE ALL ON SEQUENCES FROM {APP_ROLE}")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA {_schema()} REVOKE ALL ON TABLES FROM {APP_ROLE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {_schema()} FROM {APP_ROLE}")
    op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {_schema()} FROM {APP_ROLE}")
    op.execute(f"REVOKE USAGE ON SCHEMA {_schema()} FROM {APP_ROLE}")


def _schema() -> str:
    """The schema the tables live in, quoted (the connection's first on its search path)."""
    name = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    return '"' + name.replace('"', '""') + '"'
