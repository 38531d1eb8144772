"""Log compaction: dead ciphertext leaves the event log and the projection, then the disk.

Crypto-shredding already made a forgotten subject's ciphertext useless; compaction
makes it absent. It nulls the ``ciphertext`` column of events (their canonical bytes
commit to ``ciphertext_digest``, so the audit tree still verifies) in bounded
transactional batches: a crash leaves every batch either done or not, and a rerun
finishes the job. Physical reclamation follows: SQLite with ``secure_delete`` on, a
WAL checkpoint (TRUNCATE) and VACUUM; PostgreSQL with VACUUM of the two tables.

A forget's own compaction skips SQLite's VACUUM (a rewrite of the whole file, minutes on a
large store): ``secure_delete`` already zeroes the bytes a NULLed ciphertext leaves in its
page, and the checkpoint moves the page into the database file and truncates the WAL.
The byte scan then shows it; only if it still finds a slice (a reader held old pages in the
WAL, say) does the step VACUUM and scan again. A server's scheduled compaction does not
VACUUM either (``api.http.background.scheduled_compaction``); ``lethe compact`` does.

What is compacted: every ciphertext of a forgotten or retracted memory (always), and ciphertext of
superseded or expired memories and of older versions of updated memories, once they
have been dead for longer than the retention window. Active items' current ciphertext
is never touched.

Here: ``Compactor``, the batches and their order; the SQL is ``erasure.compaction_repository``,
reclaiming and scanning the files ``erasure.compaction_disk``, the erasure's own step
``erasure.compaction_step``.

Exceptions: ``StoreUnavailable`` (database unreachable), nothing else of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from lethe.vault.clock import utcnow
from lethe.vault.erasure import compaction_repository as repo
from lethe.vault.erasure.compaction_disk import found_any, reclaim_space, scan_store, sqlite_files
from lethe.vault.erasure.compaction_repository import ErasedScope
from lethe.vault.store.db import UnitOfWork, is_sqlite
from lethe.vault.store.tenancy import maintenance_job

DEFAULT_RETENTION = timedelta(days=30)
Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class CompactionResult:
    events_rewritten: int = 0
    projection_rows_rewritten: int = 0
    batches: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    reclaim: dict[str, Any] = field(default_factory=dict)
    scan: dict[str, Any] = field(default_factory=dict)

    @property
    def bytes_reclaimed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)

    @property
    def wal_left(self) -> bool:
        """SQLite stayed busy past the wait: the WAL still holds pages this run rewrote."""
        return self.reclaim.get("wal_truncated") is False

    def evidence(self) -> dict[str, Any]:
        return {
            "events_rewritten": self.events_rewritten,
            "projection_rows_rewritten": self.projection_rows_rewritten,
            "batches": self.batches,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "bytes_reclaimed": self.bytes_reclaimed,
            "reclaim": self.reclaim,
            "scan": self.scan,
        }


class Compactor:
    """Removes dead ciphertext from the event log and the projection, then from the disk.

    Exceptions: ``StoreUnavailable`` (503). With ``scan_for`` (only the erasure's own
    ``compacted`` step passes it), a byte scan that cannot run raises ``StepFailed``, which
    the erasure runner records and retries.
    """

    def __init__(
        self,
        uow: UnitOfWork,
        retention: timedelta = DEFAULT_RETENTION,
        batch_size: int = 1000,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.uow = uow
        self.retention = retention
        self.batch_size = batch_size
        self.clock = clock
        # A reclaim of this compactor left pages in SQLite's WAL (``wal_truncated`` false): the
        # next run empties it even with nothing to rewrite, instead of waiting for rows to.
        self._wal_owed = False

    @maintenance_job("compaction")
    def dead_ciphertexts(self, only_forgotten: bool = False, scope: ErasedScope | None = None) -> list[bytes]:
        """The ciphertexts compaction will remove (for recording scan slices first)."""
        with self.uow.read() as conn:
            seqs = repo.dead_event_seqs(conn, repo.dead_events(self._cutoff(), only_forgotten, scope))
            return repo.ciphertexts_of(conn, seqs)

    @maintenance_job("compaction")
    def ciphertext_events(self, scope: ErasedScope, still_held: bool = False) -> int:
        """How many of the scope's events ever carried ciphertext (or still do)."""
        with self.uow.read() as conn:
            return repo.count_ciphertext_events(conn, scope, still_held)

    def _cutoff(self) -> datetime:
        return self.clock() - self.retention

    # -- the work -----------------------------------------------------------------------

    @maintenance_job("compaction")
    def compact(
        self,
        only_forgotten: bool = False,
        progress: Progress | None = None,
        reclaim: bool | None = None,
        scan_for: list[bytes] | None = None,
        scope: ErasedScope | None = None,
        vacuum: bool | None = True,
        vectors: list[bytes] | None = None,
    ) -> CompactionResult:
        """Rewrite dead ciphertext away in batches, then reclaim space and scan the files.

        ``reclaim``: True always reclaims, False never, None (the default, for scheduled runs)
        only when rows were rewritten, so an idle store is not rewritten every hour; with none
        rewritten, it still empties a WAL an earlier run of this compactor could not.
        ``vacuum`` (SQLite): True reclaims with VACUUM; False checkpoints only; None
        checkpoints only, and VACUUMs (then scans again) only if the byte scan of
        ``scan_for`` still finds a slice.
        ``vectors``: sealed vectors removed earlier, looked for in the same byte scan.
        ``scope``: only one erasure's rows (its own step); without it, every forgotten
        subject except those whose erasure is still running.
        """
        result = CompactionResult(bytes_before=self.store_bytes())
        # Select in a read, outside the write lock (every writer of every process would wait
        # for the scans: the memories' 0.39 s on a 1M-memory SQLite store); each batch
        # then updates by primary key under the lock, checking again that the row is dead.
        cutoff = self._cutoff()
        dead_memories = repo.dead_memories(cutoff, only_forgotten, scope)
        with self.uow.read() as conn:
            dead = repo.dead_event_seqs(conn, repo.dead_events(cutoff, only_forgotten, scope))
            dead_rows = repo.dead_memory_keys(conn, dead_memories)
        for i in range(0, len(dead), self.batch_size):
            seqs = dead[i : i + self.batch_size]
            with self.uow.write() as conn:
                n = repo.drop_event_ciphertexts(conn, seqs)
            result.events_rewritten += n
            result.batches += 1
            if progress:
                progress(i + len(seqs), len(dead))
        for i in range(0, len(dead_rows), self.batch_size):
            keys = dead_rows[i : i + self.batch_size]
            with self.uow.write() as conn:
                result.projection_rows_rewritten += repo.drop_memory_ciphertexts(conn, keys, dead_memories)
        engine = self.uow.engine
        if reclaim or (reclaim is None and (result.events_rewritten or result.projection_rows_rewritten)):
            result.reclaim = reclaim_space(engine, vacuum=bool(vacuum))  # only with something to reclaim
        elif reclaim is None and self._wal_owed:  # an earlier run left its pages in the WAL (SQLite)
            result.reclaim = reclaim_space(engine, vacuum=False)
        if scan_for is not None or vectors is not None:
            result.scan = scan_store(engine, scan_for or [], vectors=vectors, scope=scope)
            if vacuum is None and found_any(result.scan):
                result.reclaim = {**reclaim_space(engine, vacuum=True), "vacuum_after_scan_found": True}
                result.scan = scan_store(engine, scan_for or [], vectors=vectors, scope=scope)
        if result.reclaim:
            self._wal_owed = result.wal_left
        result.bytes_after = self.store_bytes()
        return result

    @maintenance_job("compaction")
    def store_bytes(self) -> int:
        engine = self.uow.engine
        if is_sqlite(engine):
            return sum(p.stat().st_size for p in sqlite_files(engine))
        with self.uow.read() as conn:
            return repo.postgres_bytes(conn)
