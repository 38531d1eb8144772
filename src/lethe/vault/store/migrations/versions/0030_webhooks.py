"""signed webhooks: endpoints, the outbox, deliveries and their attempts

``webhook_endpoints`` holds a tenant's subscriptions (url, event types, the signing secret
sealed under a key derived from the server's pepper). ``webhook_events`` is the outbox: one
row per event, written in the transaction that changed the request's state; its id is the
``webhook-id`` every delivery of the event carries. ``webhook_deliveries`` is one row per
(event, endpoint), leased by the worker sending it; ``webhook_attempts`` records each try's
status code and time (never a response body). All empty at first. PostgreSQL: each table
tenant-walled like the other tenant tables.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-07 22:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

APP_ROLE = "lethe_app"
TENANT = "current_setting('lethe.tenant', true)"
TABLES = ("webhook_endpoints", "webhook_events", "webhook_deliveries", "webhook_attempts")


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("events", sa.Text(), nullable=False),
        sa.Column("sealed_secret", sa.LargeBinary(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_endpoints_tenant", "webhook_endpoints", ["tenant_id"])
    op.create_table(
        "webhook_events",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("event_id", sa.String(length=40), nullable=False),
        sa.Column("endpoint_id", sa.String(length=36), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("lease_owner", sa.String(length=100), nullable=True),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["state", "next_attempt_at"])
    op.create_index("ix_webhook_deliveries_endpoint", "webhook_deliveries", ["tenant_id", "endpoint_id"])
    op.create_table(
        "webhook_attempts",
        sa.Column("delivery_id", sa.String(length=36), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.PrimaryKeyConstraint("delivery_id", "n"),
    )
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
            op.execute(
                f"CREATE POLICY tenant_wall ON {table} TO {APP_ROLE} "
                f"USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
            )


def downgrade() -> None:
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_deliveries_endpoint", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_events")
    op.drop_index("ix_webhook_endpoints_tenant", table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
