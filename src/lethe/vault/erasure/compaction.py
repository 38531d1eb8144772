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

Exceptions: ``StoreUnavailable`` (database unreachable), nothing else of its own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lethe.keys.filescan import FileScanFailed, find_in_files, greppable
from lethe.vault.audit.step_names import Step
from lethe.vault.clock import iso, to_db, utcnow
from lethe.vault.erasure import vector_samples
from lethe.vault.erasure.steps import StepContext, StepFailed, StepFn
from lethe.vault.model import GONE
from lethe.vault.store.db import UnitOfWork, is_sqlite
from lethe.vault.store.projection import MEMORY_WRITTEN
from lethe.vault.store.tables import erasure_jobs, events, memories
from lethe.vault.store.tenancy import maintenance_job

DEFAULT_RETENTION = timedelta(days=30)
SCAN_SAMPLE = 64  # ciphertexts byte-scanned per compaction (bounded cost; the row check is complete)
SLICE = 16  # bytes per distinctive ciphertext slice kept (in memory only) for the file scan
# How long a checkpoint that empties the WAL waits for another connection's checkpoint (often
# another process's automatic one after its commit): SQLite answers busy at once then, with no
# busy handler, and copies nothing.
WAL_TRUNCATE_WAIT_S = 10.0
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


def slices_of(ciphertext: bytes) -> list[bytes]:
    """Three distinctive slices (near the start of the body, the middle, the end): random-looking,
    so a hit is real. Each is moved to the nearest window free of newline and NUL bytes where
    there is one, so the child's one-pass ``grep`` can look for all of them at once."""
    body = ciphertext[13:] if len(ciphertext) > 13 + SLICE else ciphertext
    if len(body) <= SLICE:
        return [body]
    mid = len(body) // 2
    return [_greppable_near(body, at) for at in (0, mid, len(body) - SLICE)]


def _greppable_near(body: bytes, at: int) -> bytes:
    last = len(body) - SLICE
    for delta in range(len(body)):
        for start in (at + delta, at - delta):
            if 0 <= start <= last and greppable(window := body[start : start + SLICE]):
                return window
    return body[at : at + SLICE]


@dataclass(frozen=True)
class ErasedScope:
    """One erasure's rows: the subject's memories and the derived ones purged with it."""

    tenant_id: str
    subject_ref: str
    derived_ids: tuple[str, ...] = ()

    def of_events(self) -> sa.ColumnElement[bool]:
        own = sa.and_(events.c.tenant_id == self.tenant_id, events.c.subject_ref == self.subject_ref)
        if self.derived_ids:
            derived = sa.and_(events.c.tenant_id == self.tenant_id, events.c.memory_id.in_(self.derived_ids))
            own = sa.or_(own, derived)
        return sa.and_(own, events.c.type == MEMORY_WRITTEN)

    def of_memories(self) -> sa.ColumnElement[bool]:
        own = sa.and_(memories.c.tenant_id == self.tenant_id, memories.c.subject_ref == self.subject_ref)
        if self.derived_ids:
            derived = sa.and_(memories.c.tenant_id == self.tenant_id, memories.c.id.in_(self.derived_ids))
            own = sa.or_(own, derived)
        return own


_GONE = sorted(s.value for s in GONE)  # forgotten or retracted: its ciphertext is dead at once

# Subjects whose erasure has not finished: their compaction is the erasure's own step, which
# samples the ciphertext for its byte scan first; a scheduled run must not take that evidence.
_ERASURE_RUNNING = sa.exists().where(
    erasure_jobs.c.tenant_id == memories.c.tenant_id,
    erasure_jobs.c.subject_ref == memories.c.subject_ref,
    erasure_jobs.c.completed_at.is_(None),
)


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

    # -- selection --------------------------------------------------------------------

    def _dead_events(self, only_forgotten: bool, scope: ErasedScope | None = None) -> sa.Select[int]:
        """Events whose ciphertext is dead: forgotten memories, or dead past the retention window."""
        cutoff = self.clock() - self.retention
        m, later = memories, events.alias("later")
        forgotten = m.c.status.in_(_GONE)
        dead_long_ago = sa.and_(m.c.status.in_(("superseded", "expired")), m.c.updated_at < to_db(cutoff))
        # An older version of a memory that was rewritten: dead once the rewrite is old enough.
        rewritten_long_ago = sa.exists().where(
            later.c.tenant_id == events.c.tenant_id,
            later.c.memory_id == events.c.memory_id,
            later.c.type == MEMORY_WRITTEN,
            later.c.seq > events.c.seq,
            later.c.occurred_at < iso(cutoff),
        )
        q = (
            sa.select(events.c.seq)
            .select_from(
                events.join(m, sa.and_(m.c.tenant_id == events.c.tenant_id, m.c.id == events.c.memory_id))
            )
            .where(events.c.ciphertext.is_not(None), events.c.type == MEMORY_WRITTEN)
        )
        if scope is not None:
            q = q.where(forgotten, scope.of_events())
        elif only_forgotten:
            q = q.where(forgotten, ~_ERASURE_RUNNING)
        else:
            q = q.where(sa.or_(sa.and_(forgotten, ~_ERASURE_RUNNING), dead_long_ago, rewritten_long_ago))
        return q.order_by(events.c.seq)

    def _dead_memories(
        self, only_forgotten: bool, scope: ErasedScope | None = None
    ) -> sa.ColumnElement[bool]:
        """Projection rows still holding dead ciphertext. Without ``scope`` finding them reads
        every memory: no index leads with the status."""
        cutoff = to_db(self.clock() - self.retention)
        m = memories
        dead: sa.ColumnElement[bool] = m.c.status.in_(_GONE)
        if scope is not None:
            dead = sa.and_(dead, scope.of_memories())
        elif not only_forgotten:
            dead = sa.or_(dead, sa.and_(m.c.status.in_(("superseded", "expired")), m.c.updated_at < cutoff))
        return sa.and_(m.c.ciphertext.is_not(None), dead)

    @maintenance_job("compaction")
    def dead_ciphertexts(self, only_forgotten: bool = False, scope: ErasedScope | None = None) -> list[bytes]:
        """The ciphertexts compaction will remove (for recording scan slices first).

        On PostgreSQL each statement of a read sees the latest commits, so a ciphertext
        another compaction removed after the first statement is left out, not read as None.
        """
        with self.uow.read() as conn:
            seqs = conn.execute(self._dead_events(only_forgotten, scope)).scalars().all()
            out: list[bytes] = []
            for i in range(0, len(seqs), 500):
                held = sa.select(events.c.ciphertext).where(
                    events.c.seq.in_(seqs[i : i + 500]), events.c.ciphertext.is_not(None)
                )
                out += conn.execute(held).scalars().all()
        return out

    @maintenance_job("compaction")
    def ciphertext_events(self, scope: ErasedScope, still_held: bool = False) -> int:
        """How many of the scope's events ever carried ciphertext (or still do)."""
        held = events.c.ciphertext if still_held else events.c.ciphertext_digest
        with self.uow.read() as conn:
            return conn.execute(
                sa.select(sa.func.count()).select_from(events).where(scope.of_events(), held.is_not(None))
            ).scalar_one()

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
        dead_memories = self._dead_memories(only_forgotten, scope)
        with self.uow.read() as conn:
            dead = conn.execute(self._dead_events(only_forgotten, scope)).scalars().all()
            found = sa.select(memories.c.tenant_id, memories.c.id).where(dead_memories)
            dead_rows = conn.execute(found).all()
        for i in range(0, len(dead), self.batch_size):
            seqs = dead[i : i + self.batch_size]
            with self.uow.write() as conn:
                n = conn.execute(
                    events.update()
                    .where(events.c.seq.in_(seqs), events.c.ciphertext.is_not(None))
                    .values(ciphertext=None)
                ).rowcount
            result.events_rewritten += n
            result.batches += 1
            if progress:
                progress(i + len(seqs), len(dead))
        key = sa.tuple_(memories.c.tenant_id, memories.c.id)
        for i in range(0, len(dead_rows), self.batch_size):
            keys = [tuple(r) for r in dead_rows[i : i + self.batch_size]]
            with self.uow.write() as conn:
                result.projection_rows_rewritten += conn.execute(
                    memories.update().where(key.in_(keys), dead_memories).values(ciphertext=None)
                ).rowcount
        engine = self.uow.engine
        if reclaim or (reclaim is None and (result.events_rewritten or result.projection_rows_rewritten)):
            result.reclaim = reclaim_space(engine, vacuum=bool(vacuum))  # only with something to reclaim
        elif reclaim is None and self._wal_owed:  # an earlier run left its pages in the WAL (SQLite)
            result.reclaim = reclaim_space(engine, vacuum=False)
        if scan_for is not None or vectors is not None:
            result.scan = scan_store(engine, scan_for or [], vectors=vectors, scope=scope)
            if vacuum is None and _found_any(result.scan):
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
            return int(
                conn.execute(
                    sa.text("SELECT pg_total_relation_size('events') + pg_total_relation_size('memories')")
                ).scalar_one()
            )


def sqlite_files(engine: Engine) -> list[Path]:
    db = Path(engine.url.database or "")
    return [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-journal")) if p.exists()]


def reclaim_space(engine: Engine, vacuum: bool = True) -> dict[str, Any]:
    """Make the freed bytes go away on disk, not only in the logical view.

    SQLite: the checkpoint copies the changed pages (their freed space zeroed by
    ``secure_delete``) into the database file and truncates the WAL, waiting out another
    connection's checkpoint (``_truncate_wal``; ``wal_truncated`` says whether it got
    through); VACUUM also rebuilds the file without its free pages (slow: it rewrites the
    whole store).
    """
    if is_sqlite(engine):
        raw = engine.raw_connection()  # outside any transaction: VACUUM refuses to run inside one
        try:
            driver = raw.driver_connection
            assert driver is not None, "a connection just checked out has its driver connection"
            if vacuum:  # the checkpoint after VACUUM is the one that must get through
                driver.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                driver.execute("VACUUM")
            truncated = _truncate_wal(driver)
        finally:
            raw.close()
        return {
            "engine": "sqlite",
            "secure_delete": True,
            "wal_checkpoint": "TRUNCATE",
            "wal_truncated": truncated,
            "vacuum": vacuum,
        }
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM (ANALYZE) events")
        conn.exec_driver_sql("VACUUM (ANALYZE) memories")
        stats = conn.execute(
            sa.text(
                "SELECT relname, vacuum_count, n_dead_tup FROM pg_stat_user_tables "
                "WHERE relname IN ('events', 'memories') ORDER BY relname"
            )
        ).all()
    return {
        "engine": "postgresql",
        "vacuum": True,
        "stats": {r.relname: {"vacuum_count": r.vacuum_count, "n_dead_tup": r.n_dead_tup} for r in stats},
    }


def _truncate_wal(driver: Any) -> bool:
    """Checkpoint every WAL frame into the database file and empty the WAL; whether it did.

    SQLite reports busy instead when another connection is checkpointing (at once) or when a
    reader still uses the WAL past the busy timeout; it is asked again, until
    ``WAL_TRUNCATE_WAIT_S`` has passed. The pages the compaction rewrote are then in the
    database file; if it never got through, the byte scan that follows is what tells."""
    deadline = time.monotonic() + WAL_TRUNCATE_WAIT_S
    while True:
        busy = driver.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if not busy:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def scan_store(
    engine: Engine,
    ciphertexts: list[bytes],
    sample: int = SCAN_SAMPLE,
    vectors: list[bytes] | None = None,
    scope: ErasedScope | None = None,
) -> dict[str, Any]:
    """Show the dead ciphertexts are gone: a complete row check, and a byte scan of the files.

    The row check covers every ciphertext (by digest). The byte scan (SQLite) searches the
    database file and WAL for three slices of up to ``sample`` ciphertexts spread evenly
    over the list, so its cost is bounded rather than growing with the subject's size. It
    runs in a child process (``keys.filescan``): this process holds connections to these
    files, and opening and closing them here would drop its SQLite locks. With ``vectors``
    (sealed vectors a job removed), their slices are looked for in the same pass over the
    files and reported under ``vector_scan``: one read of a large store, not two. With
    ``scope``, the row check reads the erasure's own events (an index range) rather than every
    event: a memory's ciphertext is only ever in its own ``memory.written`` events, and the
    byte scan covers the rest of the files.
    """
    digests = sorted({hashlib.sha256(c).hexdigest() for c in ciphertexts})
    left = 0
    within = scope.of_events() if scope is not None else sa.true()
    with engine.connect() as conn:
        for i in range(0, len(digests), 500):
            left += conn.execute(
                sa.select(sa.func.count())
                .select_from(events)
                .where(
                    within,
                    events.c.ciphertext_digest.in_(digests[i : i + 500]),
                    events.c.ciphertext.is_not(None),
                )
            ).scalar_one()
    result: dict[str, Any] = {"ciphertexts": len(ciphertexts), "rows_still_holding_them": left}
    if not is_sqlite(engine):
        result["method"] = "row check by digest (PostgreSQL pages are not byte-scanned)"
        if vectors is not None:
            result["vector_scan"] = {"method": "row check (PostgreSQL pages are not byte-scanned)"}
        return result
    groups = {"ciphertexts": _sampled(ciphertexts, sample), "vectors": _sampled(vectors or [], sample)}
    slices = {name: [s for c in chosen for s in slices_of(c)] for name, chosen in groups.items()}
    needles = slices["ciphertexts"] + slices["vectors"]
    files = sqlite_files(engine)
    try:
        hits = find_in_files(files, needles)
    except FileScanFailed as exc:
        raise StepFailed(str(exc)) from exc
    found = {i for indices in hits.values() for i in indices}
    split = len(slices["ciphertexts"])
    shared = {
        "method": "row check by digest, and byte scan of database file and WAL",
        "files": [p.name for p in files],
        "bytes_scanned": sum(p.stat().st_size for p in files if p.exists()),
    }
    result.update(
        {
            **shared,
            "ciphertexts_scanned": len(groups["ciphertexts"]),
            "slices": split,
            "slices_found": sum(1 for i in found if i < split),
        }
    )
    if vectors is not None:
        result["vector_scan"] = {
            **shared,
            "method": "byte scan of database file and WAL",
            "ciphertexts_scanned": len(groups["vectors"]),
            "slices": len(slices["vectors"]),
            "slices_found": sum(1 for i in found if i >= split),
        }
    return result


def _found_any(scan: dict[str, Any]) -> bool:
    return bool(scan.get("slices_found") or scan.get("vector_scan", {}).get("slices_found"))


def _sampled(secrets: list[bytes], sample: int) -> list[bytes]:
    """Up to ``sample`` of ``secrets``, spread evenly over the list."""
    step = max(1, len(secrets) // sample) if secrets else 1
    return secrets[::step][:sample]


def compaction_work(compactor: Compactor) -> StepFn:
    """The work of the erasure job's ``compacted`` step (``erasure.pipeline``): remove the
    subject's dead ciphertext, show it is gone.

    The byte scan samples the ciphertext that is still there before compacting it; a second
    scan (``vector_scan``) looks for the sealed vectors the job's earlier steps removed
    (``erasure.vector_samples``). If
    none is left to sample (a crash after an earlier attempt compacted it), the evidence
    says the scan was not performed and why; the row check is complete either way.
    """

    def run(ctx: StepContext, _: Connection | None) -> dict[str, Any]:
        job = ctx.job
        purge = [s.evidence for s in job.steps if s.step == Step.DERIVED_PURGED]
        derived = purge[0].get("derived_ids", []) if purge else []
        scope = ErasedScope(job.tenant_id, job.subject_ref, tuple(derived))
        ever = compactor.ciphertext_events(scope)
        present = compactor.dead_ciphertexts(scope=scope)
        vectors = vector_samples.take(job.id) or []  # deleted earlier in this job, held in memory
        result = compactor.compact(
            only_forgotten=True,
            scope=scope,
            reclaim=True,
            scan_for=present or None,
            vacuum=None,
            vectors=vectors or None,
        )
        vector_scan = _vector_evidence(result, len(vectors))
        still = compactor.ciphertext_events(scope, still_held=True)
        if still or result.scan.get("slices_found") or result.scan.get("rows_still_holding_them"):
            raise StepFailed("dead ciphertext is still present in the store after compaction")
        if vector_scan.get("slices_found"):
            raise StepFailed("sealed vectors of the subject are still present in the store after compaction")
        evidence = result.evidence()
        evidence["row_check"] = {
            "events_that_held_ciphertext": ever,
            "events_still_holding_ciphertext": still,
        }
        evidence["vector_scan"] = vector_scan
        if present:
            evidence["scan"]["performed"] = True
        else:
            evidence["scan"] = {
                "performed": False,
                "reason": (
                    "the subject had no ciphertext in the store"
                    if not ever
                    else "no byte scan evidence: the ciphertext had already been removed before this "
                    "step could sample it (an earlier attempt compacted it and was interrupted); "
                    "the row check is complete"
                ),
            }
        return evidence

    return run


def _vector_evidence(result: CompactionResult, removed: int) -> dict[str, Any]:
    """The byte scan's findings for the sealed vectors this job removed (``erasure.vector_samples``)."""
    scan = result.scan.pop("vector_scan", None)
    if scan is None:
        return {
            "performed": False,
            "sealed_vectors": 0,
            "reason": "no sealed vectors were removed by this job in this process",
        }
    if result.reclaim.get("vacuum_after_scan_found"):
        scan["vacuum_after_scan_found"] = True
    return {"performed": True, "sealed_vectors": removed, **scan}
