"""SQLite's writers queue before its write lock: in the process first, then across processes.

SQLite has one write lock per database, and a writer that finds it taken sleeps in the
busy handler in steps of up to 100 ms, whatever the lock does meanwhile. Under load the
writers that happen to be awake keep taking the lock and a sleeper can miss it for a
second: with 16 clients, a write's p99 was 1.8 s when 16 threads waited there, and
0.5-1.3 s with two server processes after the threads of each queued in their process
(67-82 ms with one process). So before ``BEGIN IMMEDIATE`` a writer queues

1. on one in-process lock per engine: its process's writers one at a time;
2. on a ``flock`` of a side file beside the database (``<database>-writers.lock``): a
   process waiting there is woken by the kernel when the holder lets go, not at its next
   poll, and wins the lock about as often as the holder's process does.

Then SQLite's lock is free, unless a process outside this queue holds it (the ``sqlite3``
shell, an older release): SQLite's busy handler waits for that one as before. The queue
is advisory; what keeps writes safe is SQLite's own lock.

The side file is never the database: the ``flock`` and the ``close`` of its descriptors
touch none of the POSIX locks SQLite holds on the database file (those are per process
and file, and closing *any* descriptor of the database would drop them).

A wait is bounded (the caller's timeout): ``flock`` cannot time out, so a writer that
must wait hands the wait to a helper thread on a descriptor of its own and waits for that
thread; on timeout the helper is abandoned and lets go of the lock as soon as it gets it.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import weakref
from pathlib import Path

from sqlalchemy.engine import Engine

SUFFIX = "-writers.lock"


class WriterQueue:
    """The queue of one SQLite database's writers in this process (reentrant per thread)."""

    def __init__(self, database: Path | None) -> None:
        self.path = None if database is None else database.with_name(database.name + SUFFIX)
        self._gate = threading.RLock()
        self._depth = 0  # the owning thread's nesting, changed only while holding the gate
        self._fd: int | None = None  # the descriptor that holds the flock

    def acquire(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for this process's and then the database's turn."""
        deadline = time.monotonic() + timeout
        if not self._gate.acquire(timeout=timeout):
            return False
        if self._depth == 0 and self.path is not None:
            fd = _flock(self.path, max(0.0, deadline - time.monotonic()))
            if fd is None:
                self._gate.release()
                return False
            self._fd = fd
        self._depth += 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the side file's descriptor releases its flock
        self._gate.release()


def _flock(path: Path, timeout: float) -> int | None:
    """A descriptor of ``path`` holding an exclusive flock, or None after ``timeout`` seconds."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        pass
    except BaseException:
        os.close(fd)
        raise
    got = threading.Event()
    mutex = threading.Lock()
    abandoned = False

    def wait() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            return
        with mutex:
            if abandoned:
                os.close(fd)  # its writer gave up: let the next one in
            else:
                got.set()

    threading.Thread(target=wait, name="lethe-sqlite-writer-wait", daemon=True).start()
    if got.wait(timeout):
        return fd
    with mutex:
        if got.is_set():
            return fd
        abandoned = True
    return None


_QUEUES: weakref.WeakKeyDictionary[Engine, WriterQueue] = weakref.WeakKeyDictionary()
_QUEUES_GUARD = threading.Lock()


def writer_queue(engine: Engine) -> WriterQueue:
    """The writer queue of an SQLite engine (an in-memory database queues in the process only)."""
    with _QUEUES_GUARD:
        queue = _QUEUES.get(engine)
        if queue is None:
            database = engine.url.database
            in_memory = not database or database == ":memory:" or "mode=memory" in str(engine.url)
            queue = _QUEUES[engine] = WriterQueue(None if in_memory else Path(database))
        return queue
