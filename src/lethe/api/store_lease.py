"""Who may use a store at the same time: servers and CLI commands share it, a few need it alone.

Every ``lethe serve`` holds a *shared* lease on its store for as long as it runs. The
commands that replace or reshape the store under everyone (``lethe backup restore``,
``lethe migrate``) take an *exclusive* lease without waiting, and refuse with a clear
message while any server holds it. ``lethe reindex`` takes a *shared* lease like a server
(it is safe beside servers: it rebuilds in one write transaction), without waiting, so a
restore or migration cannot swap the store under it, nor start while it runs. Other CLI
commands (forget, compact, erasure list, audit checkpoint, backup create, ...) need no
lease: the database's own locks keep them safe beside a running server.

The lease is two locks, because a store has two places processes meet:
- a ``flock`` on ``<data dir>/lethe.lock`` (the data dir holds the SQLite store and the
  local keystore). ``flock`` locks are independent of the POSIX record locks SQLite
  uses, and the lock file is never a database, so opening and closing it cannot drop a
  SQLite lock;
- on PostgreSQL, a session advisory lock (shared / exclusive) held on a dedicated
  connection, so servers on other hosts that share the database count too.

Exceptions: ``StoreNotReady`` (the exclusive lease is held by a running server).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lethe.vault.errors import StoreNotReady

LOCK_FILE = "lethe.lock"
_PG_LEASE = 0x4C455448 + 1  # next to the event-log lock: "LETI"


class StoreLease:
    """A held lease; ``release`` (or leaving the ``with`` block) gives it back."""

    def __init__(self, fd: int, conn: Connection | None, engine: Engine | None = None) -> None:
        self._fd: int | None = fd
        self._conn = conn
        self._engine = engine  # set for a server's shared lease, which ``renew`` keeps alive
        self.held = True

    def renew(self) -> int:
        """Take the PostgreSQL lease again if its connection was lost; 1 if it was retaken.

        A PostgreSQL restart (or a dropped connection) releases the session's advisory lock
        without telling anyone, and a restore elsewhere could then take the store from under
        this server. The server calls this every few seconds; until the lease is back,
        ``held`` is False and readiness fails.
        """
        if self._engine is None or self._fd is None:
            return 0
        try:
            if self._conn is not None:
                self._conn.execute(sa.text("SELECT 1"))
                self.held = True
                return 0
        except Exception:  # the connection is gone, and with it the lock
            _end_session(self._conn)  # type: ignore[arg-type]
            self._conn = None
        self.held = False
        try:
            conn = _try_pg_lock(self._engine, exclusive=False)
        except Exception:
            return 0  # the database is still away: try again on the next tick
        if conn is None:  # a restore or migration holds it now: stay not ready, keep trying
            return 0
        self._conn, self.held = conn, True
        return 1

    def release(self) -> None:
        if self._conn is not None:
            _end_session(self._conn)
            self._conn = None
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> StoreLease:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def _end_session(conn: Connection) -> None:
    """Close the lease's database session itself: an advisory lock lives as long as the
    session, and a plain ``close`` would only hand the still-locked session back to the pool."""
    with suppress(Exception):  # a dropped connection has released its locks already
        conn.invalidate()
    with suppress(Exception):
        conn.close()


def _lock_file(data_dir: Path, exclusive: bool, wait: bool = True) -> int:
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB if exclusive or not wait else mode)
    except BlockingIOError:
        os.close(fd)
        raise
    return fd


def serve_lease(data_dir: Path, engine: Engine) -> StoreLease:
    """The shared lease a running server holds (waits only while an exclusive command runs)."""
    fd = _lock_file(data_dir, exclusive=False)
    conn = None
    if engine.dialect.name == "postgresql":
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        conn.execute(sa.text("SELECT pg_advisory_lock_shared(:k)"), {"k": _PG_LEASE})
    return StoreLease(fd, conn, engine if conn is not None else None)


@contextmanager
def exclusive_lease(data_dir: Path, engine: Engine, what: str) -> Iterator[StoreLease]:
    """Run ``what`` with no server on the store, or refuse at once."""
    refusal = StoreNotReady(
        f"{what} needs the store to itself: stop every `lethe serve` using it first "
        f"(a running server holds {data_dir / LOCK_FILE}"
        + (" or the database's lease" if engine.dialect.name == "postgresql" else "")
        + ")"
    )
    with _take_now(data_dir, engine, exclusive=True, refusal=refusal) as lease:
        yield lease


@contextmanager
def shared_lease(data_dir: Path, engine: Engine, what: str) -> Iterator[StoreLease]:
    """Run ``what`` beside servers but never beside a restore or migration: refuse at once then."""
    refusal = StoreNotReady(
        f"{what} cannot run while a restore or migration holds the store ({data_dir / LOCK_FILE}"
        + (" or the database's lease" if engine.dialect.name == "postgresql" else "")
        + "); run it again when that has finished"
    )
    with _take_now(data_dir, engine, exclusive=False, refusal=refusal) as lease:
        yield lease


def _try_pg_lock(engine: Engine, exclusive: bool) -> Connection | None:
    """A session holding the store's advisory lock, or None if someone holds it the other way."""
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    fn = "pg_try_advisory_lock" if exclusive else "pg_try_advisory_lock_shared"
    if conn.execute(sa.text(f"SELECT {fn}(:k)"), {"k": _PG_LEASE}).scalar_one():
        return conn
    _end_session(conn)
    return None


def _take_now(data_dir: Path, engine: Engine, exclusive: bool, refusal: StoreNotReady) -> StoreLease:
    """Both locks of the lease without waiting, or ``refusal``."""
    try:
        fd = _lock_file(data_dir, exclusive=exclusive, wait=False)
    except BlockingIOError:
        raise refusal from None
    conn = None
    if engine.dialect.name == "postgresql":
        conn = _try_pg_lock(engine, exclusive)
        if conn is None:
            os.close(fd)
            raise refusal
    return StoreLease(fd, conn)
