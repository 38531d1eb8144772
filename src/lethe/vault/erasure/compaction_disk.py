"""Compaction on disk: reclaiming the freed bytes, and the byte scan that shows them gone.

SQLite: ``secure_delete`` zeroes what a NULLed ciphertext leaves in its page; a WAL
checkpoint (TRUNCATE) moves the pages into the database file and empties the WAL; VACUUM
(on request) rebuilds the file. PostgreSQL: VACUUM of the two tables. The byte scan looks
for distinctive slices of the dead ciphertexts in the SQLite files, in a child process
(``keys.filescan``); the row check by digest covers every ciphertext on both engines.

Exceptions: ``StepFailed`` when the byte scan cannot run (the erasure runner retries).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from lethe.keys.filescan import FileScanFailed, find_in_files, greppable
from lethe.vault.erasure.compaction_repository import ErasedScope, rows_still_holding
from lethe.vault.erasure.steps import StepFailed
from lethe.vault.store.db import is_sqlite

SCAN_SAMPLE = 64  # ciphertexts byte-scanned per compaction (bounded cost; the row check is complete)
SLICE = 16  # bytes per distinctive ciphertext slice kept (in memory only) for the file scan
# How long a checkpoint that empties the WAL waits for another connection's checkpoint (often
# another process's automatic one after its commit): SQLite answers busy at once then, with no
# busy handler, and copies nothing.
WAL_TRUNCATE_WAIT_S = 10.0


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
    with engine.connect() as conn:
        left = rows_still_holding(conn, digests, scope)
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


def found_any(scan: dict[str, Any]) -> bool:
    return bool(scan.get("slices_found") or scan.get("vector_scan", {}).get("slices_found"))


def _sampled(secrets: list[bytes], sample: int) -> list[bytes]:
    """Up to ``sample`` of ``secrets``, spread evenly over the list."""
    step = max(1, len(secrets) // sample) if secrets else 1
    return secrets[::step][:sample]
