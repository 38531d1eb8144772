"""Figure 6d charges the PostgreSQL server's CPU to the requests it served: it finds the
server's main process from a connection, and only when that server runs on this machine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.api.bench.cpu import tree_cpu_seconds
from lethe.api.bench.postgres import local_server_pid

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


def test_the_local_postgres_server_is_found_as_the_parent_of_every_backend(postgres):
    url = postgres.create()
    engine = sa.create_engine(url)
    try:
        server = local_server_pid(engine)
        assert server is not None
        assert Path(f"/proc/{server}/cmdline").read_bytes().split(b"\0")[0].endswith(b"postgres")
        with engine.connect() as conn:  # another backend, another process: the same parent
            backend = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
            status = Path(f"/proc/{backend}/status").read_text()
        assert f"PPid:\t{server}\n" in status
        assert (tree_cpu_seconds(server) or 0) > 0
    finally:
        engine.dispose()
        postgres.drop(url)


def test_a_server_that_is_not_local_has_no_pid(postgres, monkeypatch):
    """A backend pid that names no local process (a server on another host) gives None."""
    url = postgres.create()
    engine = sa.create_engine(url)
    real = Path.read_text

    def elsewhere(self: Path, *args: object, **kwargs: object) -> str:
        if str(self).startswith("/proc/") and str(self).endswith("/status"):
            raise FileNotFoundError(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", elsewhere)
    try:
        assert local_server_pid(engine) is None
    finally:
        engine.dispose()
        postgres.drop(url)
