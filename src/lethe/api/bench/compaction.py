"""Figure 5a, ``compaction``: events/s of compaction (rewrite, then reclamation).

Subjects forgotten with the core steps only leave their ciphertext in the log; compaction
then selects it, rewrites it away, reclaims the space and byte-scans the files for a
sample of it. Baseline: the same rows of a copy of the log nulled by plain batched
``UPDATE``s.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from lethe.api.bench.baselines import event_count, plain_copy
from lethe.api.bench.context import BenchError, RunContext
from lethe.api.bench.stats import ratio
from lethe.api.bench.workload import LEGAL_BASIS, REFERENCE, load_subjects, officer_caller
from lethe.api.bootstrap import Container
from lethe.vault.erasure.compaction_disk import reclaim_space, scan_store
from lethe.vault.erasure.pipeline import erasure_pipeline
from lethe.vault.erasure.service import ErasureService
from lethe.vault.store.tables import events

SCAN_SAMPLE = 200  # dead ciphertexts whose slices the compaction figure scans the files for
TENANT = "bench-compact"
UPDATE_BATCH = 1000


def measure(ctx: RunContext) -> dict[str, Any]:
    """In the ``forget`` store of figure 4, which must exist."""
    s = ctx.scale
    c = ctx.stores["forget"]
    rng = random.Random(16)
    subjects = [f"compact-{i}" for i in range(s.compaction_subjects)]
    load_subjects(c.memories, TENANT, subjects, s.compaction_per_subject, rng)
    _forget_core_only(c, subjects)
    base_rows, base_s = _baseline(ctx, c, subjects)
    # Ours: select the dead ciphertext, rewrite it away, reclaim, scan the files.
    t = time.perf_counter()
    ciphertexts = c.compactor.dead_ciphertexts(only_forgotten=True)
    select_s = time.perf_counter() - t
    t = time.perf_counter()
    result = c.compactor.compact(only_forgotten=True, reclaim=False)
    rewrite_s = time.perf_counter() - t
    t = time.perf_counter()
    before = c.compactor.store_bytes()
    reclaim_space(c.uow.engine)
    after = c.compactor.store_bytes()
    reclaim_s = time.perf_counter() - t
    # The byte scan costs (slices x store bytes): a fixed sample keeps it bounded.
    sample = random.Random(17).sample(ciphertexts, min(SCAN_SAMPLE, len(ciphertexts)))
    t = time.perf_counter()
    scan = scan_store(c.uow.engine, sample)
    scan_s = time.perf_counter() - t
    n = result.events_rewritten
    with c.uow.read() as conn:
        log_events = event_count(conn)
    rewrite_rate = n / rewrite_s if rewrite_s else math.nan
    total_s = select_s + rewrite_s + reclaim_s
    return {
        "events_rewritten": n,
        "store_events": log_events,
        "rewrite_events_per_s": round(rewrite_rate, 1),
        "end_to_end_events_per_s": round(n / total_s, 1),
        "baseline_update_rows_per_s": round(base_rows / base_s, 1),
        "baseline_rows": base_rows,
        "ratio": ratio(rewrite_rate, base_rows / base_s),
        "seconds": {
            "select_dead": round(select_s, 3),
            "rewrite": round(rewrite_s, 3),
            "reclaim_vacuum": round(reclaim_s, 3),
            "scan_files": round(scan_s, 3),
        },
        "store_bytes_before_reclaim": before,
        "store_bytes_after_reclaim": after,
        "scan_ciphertexts_sampled": len(sample),
        "scan_slices": scan.get("slices"),
        "scan_bytes": scan.get("bytes_scanned"),
        "scan_slices_found": scan.get("slices_found"),
        "scan_ms_per_slice_per_mib": round(
            scan_s
            * 1000
            / max(1, scan.get("slices") or 1)
            / max(1e-9, (scan.get("bytes_scanned") or 1) / 2**20),
            4,
        ),
    }


def _forget_core_only(c: Container, subjects: list[str]) -> None:
    """Forget with the core steps only (no compaction step), so the ciphertext is left for us."""
    core = ErasureService(c.uow, c.kms, c.keyring, c.pseudonyms, erasure_pipeline(), log=c.log)
    officer = officer_caller(TENANT)
    for subject in subjects:
        job = core.request(officer, subject, LEGAL_BASIS, REFERENCE)
        if not core.advance(job.id):
            raise BenchError("a forget before compaction did not complete")


def _baseline(ctx: RunContext, c: Container, subjects: list[str]) -> tuple[int, float]:
    """A copy of the event log, then the subjects' ciphertext nulled by plain UPDATEs: (rows, s)."""
    db_path = Path(c.uow.engine.url.database or "")
    base_engine, copy = plain_copy(ctx.root / "forget" / "baseline-compaction.sqlite3", events)
    with base_engine.begin() as conn:
        conn.exec_driver_sql(f"ATTACH DATABASE '{db_path}' AS src")
        conn.exec_driver_sql("INSERT INTO main.events SELECT * FROM src.events")
    with base_engine.connect() as conn:
        conn.exec_driver_sql("DETACH DATABASE src")
    refs = [c.pseudonyms.subject_ref(TENANT, x) for x in subjects]
    with base_engine.connect() as conn:
        dead = (
            conn.execute(
                sa.select(copy.c.seq)
                .where(copy.c.tenant_id == TENANT, copy.c.subject_ref.in_(refs))
                .where(copy.c.ciphertext.is_not(None))
                .order_by(copy.c.seq)
            )
            .scalars()
            .all()
        )
    t = time.perf_counter()
    for i in range(0, len(dead), UPDATE_BATCH):
        with base_engine.begin() as conn:
            conn.execute(
                copy.update().where(copy.c.seq.in_(dead[i : i + UPDATE_BATCH])).values(ciphertext=None)
            )
    base_s = time.perf_counter() - t
    base_engine.dispose()
    return len(dead), base_s
