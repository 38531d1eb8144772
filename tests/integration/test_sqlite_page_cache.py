"""Each pooled SQLite connection caches a bounded amount of the file (``db.SQLITE_CACHE_KIB``).

A server's pool hands out all of its connections in turn, so every one fills its page cache:
with SQLite's default of 2,000 KiB, 16 threads searching in one process held 34 MiB in them.
The test reads a table larger than any cache through 16 connections and asks SQLite itself
how much memory it holds (``sqlite3_memory_used``, through the library Python's module uses).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lethe.vault.store.db import SQLITE_CACHE_KIB, make_engine


def _sqlite_memory_used() -> Callable[[], int] | None:
    """SQLite's own count of the memory it holds in this process, if its symbol is reachable."""
    import _sqlite3

    try:
        used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    except (OSError, AttributeError):
        return None
    used.restype = ctypes.c_int64
    return lambda: int(used())


def test_sixteen_connections_that_read_a_large_table_hold_only_their_bounded_caches(tmp_path: Path) -> None:
    used = _sqlite_memory_used()
    if used is None:
        pytest.skip("this Python's SQLite does not export sqlite3_memory_used")
    engine = make_engine(f"sqlite:///{tmp_path / 'c.sqlite3'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (n INTEGER PRIMARY KEY, b BLOB)")
        for n in range(2_000):  # 8 MiB: four times SQLite's default cache, sixteen times ours
            conn.exec_driver_sql("INSERT INTO t VALUES (?, ?)", (n, os.urandom(4096)))
    before = used()
    conns = [engine.connect() for _ in range(16)]
    try:
        for c in conns:
            assert c.exec_driver_sql("SELECT sum(length(b)) FROM t").scalar() == 2_000 * 4096
            assert c.exec_driver_sql("PRAGMA cache_size").scalar() == -SQLITE_CACHE_KIB
        grown = used() - before
    finally:
        for c in conns:
            c.close()
        engine.dispose()
    # A page cache per connection, plus a little for its schema and statements: 8.0 MiB here,
    # where SQLite's default size held 16.1 MiB after the same reads.
    assert grown <= 16 * (SQLITE_CACHE_KIB + 256) * 1024, f"{grown / 2**20:.1f} MiB"
