"""PostgreSQL reads cost no transaction round trips, and the pool pings only idle connections,
yet a connection that died while idle is still replaced before anyone uses it (vault/store/db.py).
On a real PostgreSQL server."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from psycopg.pq import TransactionStatus

from lethe.vault.errors import StoreUnavailable
from lethe.vault.store import db

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


def backend_pid(uow: db.UnitOfWork) -> int:
    with uow.read() as conn:
        return conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()


def terminate(engine: sa.Engine, pid: int) -> None:
    """Kill one server session from another, as a PostgreSQL restart kills them all."""
    admin = sa.create_engine(engine.url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
    admin.dispose()


def test_a_read_opens_no_transaction_on_the_server(lethe) -> None:
    with lethe.uow.read() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one() == 0
        # Inside a BEGIN the driver would report INTRANS until the ROLLBACK's round trip.
        assert conn.connection.driver_connection.info.transaction_status == TransactionStatus.IDLE
    with lethe.uow.write() as conn:  # writes keep their transaction (and its advisory lock)
        conn.execute(sa.text("SELECT 1"))
        assert conn.connection.driver_connection.info.transaction_status == TransactionStatus.INTRANS


def test_a_connection_that_died_while_idle_is_replaced_before_use(lethe, monkeypatch) -> None:
    uow = lethe.uow
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.05)
    first = backend_pid(uow)
    terminate(uow.engine, first)
    time.sleep(0.1)
    assert backend_pid(uow) != first  # no error: the ping found it dead and the pool reconnected


def test_a_connection_reused_at_once_is_not_pinged_so_a_break_costs_one_503(lethe, monkeypatch) -> None:
    uow = lethe.uow
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    first = backend_pid(uow)
    terminate(uow.engine, first)
    with pytest.raises(StoreUnavailable):  # the request that meets the break: 503, never a 500
        backend_pid(uow)
    assert backend_pid(uow) != first  # and the pool has replaced it for the next one
