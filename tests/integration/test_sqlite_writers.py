"""A process's SQLite writers queue in the process, one at a time at SQLite's lock.

SQLite's busy handler sleeps in steps of up to 100 ms whatever the lock does meanwhile, so
threads waiting in it made a write's p99 under load 1.8 s. ``UnitOfWork.write`` queues a
process's writers on one lock first; the test counts the connections its writers hold at once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.vault.errors import StoreUnavailable
from lethe.vault.store.db import UnitOfWork, make_engine


def _engine(tmp_path: Path) -> sa.Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.sqlite3'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")
    return engine


def test_a_processs_writers_reach_sqlites_lock_one_at_a_time(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    inside, most = [0], [0]
    guard = threading.Lock()

    @sa.event.listens_for(engine, "checkout")
    def _out(*_: object) -> None:  # a writer took a connection: it goes on to BEGIN IMMEDIATE
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.002)  # give other writers the time to pile up at SQLite's lock, were they let through

    @sa.event.listens_for(engine, "checkin")
    def _in(*_: object) -> None:
        with guard:
            inside[0] -= 1

    uow = UnitOfWork(engine)

    def writer(i: int) -> None:
        for j in range(5):
            with uow.write() as conn:
                conn.exec_driver_sql("INSERT INTO t VALUES (?)", (i * 10 + j,))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with uow.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar_one() == 40
    assert most[0] == 1  # never two threads of one process waiting at SQLite's lock
    engine.dispose()


def test_a_writer_that_cannot_get_the_queue_in_time_is_told_the_store_is_unavailable(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    uow = UnitOfWork(engine)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with uow.write():
            holding.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert holding.wait(10)
        with pytest.raises(StoreUnavailable), uow.write(lock_wait_ms=50):
            pass
    finally:
        release.set()
        t.join()
    with uow.write() as conn:  # the queue is free again
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    engine.dispose()
