"""A fresh PostgreSQL database for one figure, dropped when the figure is done.

The server is ``LETHE_BENCH_POSTGRES_URL`` (default: the local server's ``postgres``
database, trust auth). Figures that need it are skipped, with the reason, where no
server answers.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


class NoPostgres(Exception):
    """No PostgreSQL server answers at ``LETHE_BENCH_POSTGRES_URL``; the message says why."""


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty database; dropped (connections forced off) on the way out."""
    admin_url = os.environ.get("LETHE_BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    try:
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except Exception as exc:  # no server, no driver, refused: the figure cannot run here
        raise NoPostgres(f"no PostgreSQL at LETHE_BENCH_POSTGRES_URL ({type(exc).__name__})") from None
    name = f"lethe_bench_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
