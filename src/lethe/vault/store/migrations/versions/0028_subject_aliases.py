"""subject aliases: the references subjects were stored under before ids were folded

Subject ids now lose their default-ignorable code points (zero-width space, joiners, soft
hyphen, variation selectors, ...) before they are keyed (``audit.certificate_format.fold_subject_id``),
so "alice\u200b-x" and "alice-x" are one subject. A store written earlier keys the first
under the ref of the unfolded spelling. ``subject_aliases`` maps the ref of each folded id
to the refs its earlier spellings were stored under, so forgetting, previewing and exporting
the folded id reach them too.

The ids are inside the sealed envelopes and the refs are keyed by the server's pepper, so
no SQL can re-derive them: the table is created empty here and filled by ``lethe migrate``
after the schema upgrade (``custody.subject_aliases.rederive``, which opens one envelope
per stored subject through the KMS). PostgreSQL: tenant-walled like the other tenant tables.

Revision ID: 0028
Revises: 0026
Create Date: 2026-12-07 18:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

APP_ROLE = "lethe_app"
TENANT = "current_setting('lethe.tenant', true)"


def upgrade() -> None:
    op.create_table(
        "subject_aliases",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("alias_ref", sa.String(length=64), nullable=False),
        sa.Column("subject_ref", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "alias_ref"),
    )
    op.create_index("ix_subject_aliases_subject", "subject_aliases", ["tenant_id", "subject_ref"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE subject_aliases ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_wall ON subject_aliases TO {APP_ROLE} "
            f"USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
        )


def downgrade() -> None:
    op.drop_index("ix_subject_aliases_subject", table_name="subject_aliases")
    op.drop_table("subject_aliases")
