"""Alembic environment: runs on a connection handed over by ``vault.schema``."""

from alembic import context

from lethe.vault.store.tables import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - only used when running the alembic CLI by hand
    import sqlalchemy as sa

    connection = sa.create_engine(config.get_main_option("sqlalchemy.url")).connect()

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
