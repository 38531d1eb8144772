"""Group commit: the write transactions a process's threads start together share one.

Under concurrent writes a write transaction held SQLite's lock ~3.7 ms, and ~1.5 ms of it
was ``BEGIN IMMEDIATE`` and the ``COMMIT`` (an fsync of the WAL at ``synchronous=FULL``);
the writers of every process wait for that lock one at a time. So a writer that arrives
while another holds the lock queues its work here instead of taking the lock itself:

- the first writer leads: it takes the lock (``UnitOfWork.write``), then every piece of
  work queued by then (at most ``MAX_BATCH``), runs each in its own savepoint, and commits
  once;
- a piece of work that raises is rolled back to its savepoint alone, and its exception
  goes to its own caller; the rest of the batch commits;
- a driver error that is not a constraint violation (an outage, I/O) aborts the whole
  transaction: every writer of the batch gets the error, none is reported written;
- every writer returns only after the commit that holds its work (or with its error);
- a leader hands the lead to the first writer still queued when its batch is done.

- only work of the same affinity (on PostgreSQL with Row-Level Security: the tenant a
  writer acts for, ``store.tenancy``) shares a transaction, since the tenant setting is the
  transaction's; work of another affinity waits for the next batch, in queue order.

One writer alone runs as before: its work in the transaction, no savepoint. The work runs
on the leader's thread, so it must not rely on thread-local state or start a transaction
of its own; it may raise, and what it returns is handed to its caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from lethe.vault.store import driver_cursor

T = TypeVar("T")
MAX_BATCH = 32


class _Slot:
    """One writer's work, and what came of it."""

    __slots__ = ("affinity", "done", "error", "lead", "result", "woken", "work")

    def __init__(self, work: Callable[[Connection], Any], affinity: Hashable) -> None:
        self.work = work
        self.affinity = affinity
        self.woken = threading.Event()
        self.lead = False  # woken to lead the next batch, not because its work is done
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


class GroupCommit:
    """The queue of one ``UnitOfWork``'s grouped writes (``begin(affinity)``: its write
    transaction for that affinity; ``affinity()``: the calling writer's, read in its thread)."""

    def __init__(
        self,
        begin: Callable[[Any], AbstractContextManager[Connection]],
        max_batch: int = MAX_BATCH,
        affinity: Callable[[], Hashable] = lambda: None,
    ):
        self._begin = begin
        self._affinity = affinity
        self._max = max_batch
        self._mutex = threading.Lock()
        self._queued: list[_Slot] = []
        self._leading = False

    def run(self, work: Callable[[Connection], T]) -> T:
        """``work(conn)`` in a write transaction, maybe shared with other threads' work;
        its result once committed, or its exception."""
        slot = _Slot(work, self._affinity())
        with self._mutex:
            self._queued.append(slot)
            lead = not self._leading
            self._leading = True
        if not lead:
            slot.woken.wait()
            lead = slot.lead
        if lead:
            self._lead(slot)
        return slot.outcome()

    def _lead(self, mine: _Slot) -> None:
        self._one_batch(mine.affinity)  # a leader's own work is first in the queue: in this batch
        assert mine.done
        with self._mutex:
            if self._queued:
                following = self._queued[0]
                following.lead = True
                following.woken.set()
            else:
                self._leading = False

    def _take(self, affinity: Hashable) -> list[_Slot]:
        """The queued work of ``affinity``, in queue order, at most ``max_batch``."""
        with self._mutex:
            batch = [slot for slot in self._queued if slot.affinity == affinity][: self._max]
            taken = {id(slot) for slot in batch}
            self._queued = [slot for slot in self._queued if id(slot) not in taken]
        return batch

    def _one_batch(self, affinity: Hashable) -> None:
        batch: list[_Slot] = []
        try:
            with self._begin(affinity) as conn:
                batch = self._take(affinity)  # after the lock: those who came while it was awaited
                if len(batch) == 1:
                    batch[0].result = batch[0].work(conn)
                else:
                    for slot in batch:
                        _run_in_savepoint(conn, slot)
        except BaseException as exc:  # handed to the writers it concerns
            if not batch:
                batch = self._take(affinity)  # no lock, no work ran: every writer queued now learns why
            for slot in batch:
                if slot.error is None or len(batch) == 1:
                    slot.error = exc
                slot.result = None
        for slot in batch:
            slot.done = True
            slot.woken.set()


def _run_in_savepoint(conn: Connection, slot: _Slot) -> None:
    """One writer's work in a savepoint; its own failure is rolled back alone (re-raised, to
    abort the batch, when it is a driver error other than a constraint violation)."""
    savepoint = _held_savepoint(conn) if driver_cursor.pipelined(conn.dialect) else conn.begin_nested()
    try:
        with savepoint:
            slot.result = slot.work(conn)
    except IntegrityError as exc:
        slot.error = exc
    except DBAPIError:
        raise
    except Exception as exc:  # the writer's own error, for the writer
        slot.error = exc


_SAVEPOINT, _RELEASE, _ROLLBACK_TO = (
    f"{verb} lethe_write" for verb in ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")
)


@contextmanager
def _held_savepoint(conn: Connection) -> Iterator[None]:
    """``begin_nested`` on PostgreSQL without round trips of its own: ``SAVEPOINT`` goes out
    with the work's first statement and ``RELEASE`` with the next writer's (or is dropped by
    the ``COMMIT``, which releases it) (``store.driver_cursor.defer``). A failed work is
    rolled back to it, unless it sent nothing; a driver error that aborts the batch is not."""
    driver_cursor.defer(conn, _SAVEPOINT)
    try:
        yield
    except DBAPIError as exc:
        if isinstance(exc, IntegrityError):
            _roll_back_to_savepoint(conn)
        raise
    except Exception:
        _roll_back_to_savepoint(conn)
        raise
    if not driver_cursor.take_back(conn, _SAVEPOINT):  # no statement ran: nothing to release
        driver_cursor.defer(conn, _RELEASE)


def _roll_back_to_savepoint(conn: Connection) -> None:
    """Undo what the failed work did, if it sent anything; the transaction goes on."""
    if not driver_cursor.take_back(conn, _SAVEPOINT):
        conn.exec_driver_sql(_ROLLBACK_TO)
