"""token source types: a token names the source types it may assert

``api_tokens.source_types`` holds the JSON list of the source types a token may assert
(``vault.policy.admit_source`` refuses a write asserting another). NULL means the role's
default (an agent token every non-operator type, an operator token ``operator_config``),
so every token minted before this revision keeps what it could write.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 14:40:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("source_types", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("source_types")
