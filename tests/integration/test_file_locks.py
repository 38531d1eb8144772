"""A byte scan of a live SQLite file must not drop this process's SQLite locks.

POSIX advisory locks belong to a (process, file) pair: closing any descriptor of the
file drops them all. A process with an open SQLite connection keeps a shared lock on
the database file while it uses the WAL; another process closing its last connection
only checkpoints and deletes the WAL when it can take an exclusive lock, which that
shared lock prevents. If the lock is silently lost, the other process deletes the WAL
under this one, and every write this process makes from then on goes to a deleted file.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from lethe.keys.filescan import find_in_files

OPEN_READ_CLOSE = (
    "import sqlite3, sys\n"
    "db = sqlite3.connect(sys.argv[1])\n"
    "db.execute('SELECT count(*) FROM t').fetchone()\n"
    "db.close()\n"
)


def live_connection(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")  # keep the rows in the WAL
    db.execute("CREATE TABLE t (x BLOB)")
    db.execute("INSERT INTO t VALUES (?)", (b"needle-0123456789",))
    return db


def another_process_opens_reads_and_closes(path: Path) -> None:
    subprocess.run([sys.executable, "-c", OPEN_READ_CLOSE, str(path)], check=True, timeout=30)


def test_byte_scan_in_a_child_keeps_the_wal_of_a_live_connection(tmp_path: Path) -> None:
    path = tmp_path / "live.sqlite3"
    db = live_connection(path)
    wal = Path(f"{path}-wal")
    hits = find_in_files([path, wal], [b"needle-0123456789"])
    assert hits[str(wal)] == [0]  # the scan sees the row in the WAL
    another_process_opens_reads_and_closes(path)
    assert wal.exists(), "the other process deleted the WAL of a live connection"
    db.execute("INSERT INTO t VALUES (x'00')")
    assert sqlite3.connect(path).execute("SELECT count(*) FROM t").fetchone()[0] == 2
    db.close()


def test_plain_file_io_in_the_same_process_loses_the_lock_and_the_wal(tmp_path: Path) -> None:
    """The failure the scan above avoids, shown happening (so the first test can fail)."""
    path = tmp_path / "live.sqlite3"
    db = live_connection(path)
    wal = Path(f"{path}-wal")
    assert b"needle-0123456789" in wal.read_bytes() + path.read_bytes()  # open + close here: locks gone
    another_process_opens_reads_and_closes(path)
    assert not wal.exists()  # the other process took the exclusive lock and removed the WAL
    db.close()
