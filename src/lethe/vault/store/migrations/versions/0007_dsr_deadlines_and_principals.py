"""data-subject request deadlines (extensions, a stopped clock) and named principals

Art. 12(3) deadlines: ``erasure_jobs`` gains the extension months granted, the start of
the current pause (``paused_at``; identity verification stops the clock), the time the
clock stood still in earlier pauses (``paused_us``, microseconds) and a reference to the
identity verification (never the documents). Each extension, with its reason and the
date the subject was told, is a row of ``erasure_extensions``. ``api_tokens`` gains an
optional display name and e-mail, so records can say who acted instead of a token id.

Requests filed before this revision keep the due date they were given (30 days); an
extension or a resume recomputes it by calendar months.

Revision ID: 0007
Revises: 0004
Create Date: 2026-12-10 09:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("erasure_jobs") as batch:
        batch.add_column(sa.Column("extension_months", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("paused_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("paused_us", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("identity_verification_ref", sa.String(length=200), nullable=True))
    op.create_table(
        "erasure_extensions",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("months", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("subject_notified_at", sa.DateTime(), nullable=False),
        sa.Column("extended_at", sa.DateTime(), nullable=False),
        sa.Column("extended_by", sa.String(length=200), nullable=False),
        sa.Column("event_seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "number"),
    )
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("display_name", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("email", sa.String(length=254), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("email")
        batch.drop_column("display_name")
    op.drop_table("erasure_extensions")
    with op.batch_alter_table("erasure_jobs") as batch:
        batch.drop_column("identity_verification_ref")
        batch.drop_column("paused_us")
        batch.drop_column("paused_at")
        batch.drop_column("extension_months")
