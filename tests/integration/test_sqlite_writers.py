"""SQLite's writers queue before its lock: in the process, then across processes (``store.sqlite_writers``).

SQLite's busy handler sleeps in steps of up to 100 ms whatever the lock does meanwhile, so
threads waiting in it made a write's p99 under load 1.8 s, and two server processes
meeting there 0.5-1.3 s. The tests count the connections one process's writers hold at
once, and hold a write open in another process to see the queue span processes.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.vault.errors import StoreUnavailable
from lethe.vault.store.db import UnitOfWork, make_engine
from lethe.vault.store.sqlite_writers import SUFFIX
from tests.conftest import write_lock_held


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
    with write_lock_held(uow), pytest.raises(StoreUnavailable), uow.write(lock_wait_ms=50):
        pass
    with uow.write() as conn:  # the queue is free again
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    engine.dispose()


_HOLDER = """
import sys
from lethe.vault.store.db import UnitOfWork, make_engine
uow = UnitOfWork(make_engine(sys.argv[1]))
with uow.write() as conn:
    conn.exec_driver_sql("INSERT INTO t VALUES (7)")
    print("holding", flush=True)
    sys.stdin.readline()  # until the test lets go
print("done", flush=True)
"""


def _side_file_is_locked(db: Path) -> bool:
    fd = os.open(db.with_name(db.name + SUFFIX), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # a descriptor of the side file, never of the database
    return False


def test_a_write_in_another_process_holds_the_queue_and_a_writer_here_waits_for_it(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    db = tmp_path / "w.sqlite3"
    uow = UnitOfWork(engine)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, f"sqlite:///{db}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "holding"
        assert _side_file_is_locked(db)  # the other process's writer holds the queue
        with pytest.raises(StoreUnavailable), uow.write(lock_wait_ms=100):
            pass  # it did not get past the queue to SQLite's lock, nor hang
        done = threading.Event()

        def write_here() -> None:
            with uow.write() as conn:
                conn.exec_driver_sql("INSERT INTO t VALUES (8)")
            done.set()

        waiter = threading.Thread(target=write_here)
        waiter.start()
        assert not done.wait(0.3)  # it waits while the other process writes
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "done"
        waiter.join(30)
        assert done.is_set()  # and writes once the other process is through
    finally:
        holder.kill()
        holder.wait(10)
    with uow.read() as conn:
        assert sorted(conn.exec_driver_sql("SELECT n FROM t").scalars()) == [7, 8]
    assert not _side_file_is_locked(db)  # the abandoned wait let go of the lock too
    engine.dispose()
