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
from pathlib import Path

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


def local_server_pid(engine: sa.Engine) -> int | None:
    """The pid of the PostgreSQL server (the postmaster) behind ``engine`` if it runs on this
    machine, so its CPU can be read from ``/proc``; None if it runs elsewhere (its backend's
    pid is not a local ``postgres`` process)."""
    with engine.connect() as conn:
        backend = int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())
        try:
            status = Path(f"/proc/{backend}/status").read_text()
        except OSError:
            return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    parent = int(fields.get("PPid", "0").strip() or 0)
    try:
        command = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return None
    return parent if parent > 1 and command.rsplit(b"/", 1)[-1] in (b"postgres", b"postmaster") else None
