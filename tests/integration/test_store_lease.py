"""A server's store lease survives its database connection: restores stay locked out.

On PostgreSQL the lease is a session advisory lock. When the session dies (the database
restarts, a proxy drops the connection), the lock goes with it silently; the server must
notice and take it again, or a restore on another host could replace the store under it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.api.store_lease import exclusive_lease, serve_lease
from lethe.vault.errors import StoreNotReady


def restore_would_start(engine: sa.Engine, elsewhere: Path) -> bool:
    """Whether a restore on another host (its own data dir, the same database) gets the store."""
    try:
        with exclusive_lease(elsewhere, engine, "a restore"):
            return True
    except StoreNotReady:
        return False


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_server_retakes_its_lease_after_the_database_drops_its_session(lethe, tmp_path: Path) -> None:
    engine = lethe.uow.engine
    lease = serve_lease(lethe.settings.data_dir, engine)
    try:
        assert not restore_would_start(engine, tmp_path / "other-host")
        pid = lease._conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()  # type: ignore[union-attr]
        with engine.connect() as admin:
            admin.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            admin.commit()
        assert restore_would_start(engine, tmp_path / "other-host")  # the gap the renewal closes
        assert lease.renew() == 1 and lease.held
        assert not restore_would_start(engine, tmp_path / "other-host")
        assert lease.renew() == 0  # still held: nothing to retake
    finally:
        lease.release()
    assert restore_would_start(engine, tmp_path / "other-host")
