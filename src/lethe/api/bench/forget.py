"""Figure 4, ``forget_latency``: the erasure job by step, for subjects of growing size.

One job (``ErasureService.request``, then ``advance``) per subject, split by step from the
job's step timestamps. The headline is received -> verified (the core steps); compaction
and the signed report follow and are reported beside it. Baseline: a plain ``DELETE`` of
the same rows in one durable transaction. The smallest job runs again in the large store:
the headline should not move with the store's size.
"""

from __future__ import annotations

import random
import time
from typing import Any

import sqlalchemy as sa

from lethe.api.bench.baselines import event_count, plain_copy
from lethe.api.bench.context import RunContext
from lethe.api.bench.scales import search_store_name
from lethe.api.bench.stats import ratio
from lethe.api.bench.workload import LEGAL_BASIS, REFERENCE, load_subjects, officer_caller
from lethe.api.bootstrap import Container
from lethe.vault.audit.step_names import CORE_STEP_ORDER, Step
from lethe.vault.clock import utcnow
from lethe.vault.erasure.pipeline import ORDER
from lethe.vault.store.tables import memories

HEADLINE_STEPS = CORE_STEP_ORDER  # received -> verified
# every step of a job the bench files (no identifiers attached: no residue hunt), in order
STEPS = (Step.RECEIVED.value, *(s.value for s in ORDER if s is not Step.RESIDUE_HUNTED))
TENANT = "bench-forget"


def forget(c: Container, tenant: str, subject: str) -> dict[str, Any]:
    """Run one erasure job to its end; its steps' durations, each from the previous step's end."""
    officer = officer_caller(tenant)
    t0 = utcnow()
    start = time.perf_counter()
    job = c.erasure.request(officer, subject, LEGAL_BASIS, REFERENCE)
    done = c.erasure.advance(job.id)
    wall = time.perf_counter() - start
    job = c.erasure.get(officer, job.id)
    steps: dict[str, float] = {}
    prev = t0
    for st in job.steps:
        steps[st.step] = round((st.completed_at - prev).total_seconds() * 1000, 2)
        prev = st.completed_at
    compaction = next((st.evidence for st in job.steps if st.step == Step.COMPACTED), {})
    return {
        "completed": done,
        "status": job.status,
        "headline_ms": round(sum(steps.get(k, 0.0) for k in HEADLINE_STEPS), 2),
        "steps_ms": steps,
        "wall_ms": round(wall * 1000, 2),
        "compaction_ms": steps.get(Step.COMPACTED),
        "report_ms": steps.get(Step.REPORTED),
        "events_compacted": compaction.get("events_rewritten"),
        "store_bytes_before_compaction": compaction.get("bytes_before"),
    }


def measure(ctx: RunContext) -> dict[str, Any]:
    """Builds the ``forget`` store, which the compaction and replay figures reuse."""
    s = ctx.scale
    c = ctx.stores["forget"] = ctx.build("forget")
    rng = random.Random(15)
    subjects = {n: f"forget-{n}" for n in s.forget_sizes}
    for n, subject in subjects.items():
        load_subjects(c.memories, TENANT, [subject], n, rng)
    # Baseline: the same rows in a plain table, deleted by one durable DELETE.
    base_engine, plain = plain_copy(ctx.root / "forget" / "baseline-forget.sqlite3", memories)
    with c.uow.read() as conn:
        rows = [
            dict(r._mapping) for r in conn.execute(sa.select(memories).where(memories.c.tenant_id == TENANT))
        ]
    with base_engine.begin() as conn:
        conn.execute(plain.insert(), rows)
    with c.uow.read() as conn:
        out: dict[str, Any] = {"store_events_before": event_count(conn), "subjects": {}}
    for n, subject in subjects.items():
        ref = c.pseudonyms.subject_ref(TENANT, subject)
        t = time.perf_counter()
        with base_engine.begin() as conn:
            deleted = conn.execute(
                plain.delete().where(plain.c.tenant_id == TENANT, plain.c.subject_ref == ref)
            ).rowcount
        base_ms = (time.perf_counter() - t) * 1000
        r = forget(c, TENANT, subject)
        r["memories"] = n
        r["baseline_delete_ms"] = round(base_ms, 2)
        r["baseline_rows_deleted"] = deleted
        r["ratio"] = ratio(r["headline_ms"], base_ms)
        out["subjects"][str(n)] = r
    base_engine.dispose()
    # The smallest job again in the large store: the headline should not move; compaction
    # (VACUUM and the byte scan of the whole store) does.
    large = ctx.stores["large"]
    tenant_l = rng.choice(ctx.tenants["large"])
    n = min(s.forget_sizes)
    load_subjects(large.memories, tenant_l, [f"forget-{n}"], n, rng)
    # A server signs the log's head every minute (LETHE_CHECKPOINT_INTERVAL_SECONDS); the
    # generated store never ran one, so sign it once, then reopen the store as a restarted
    # server would (no tree cached in memory): the report step then runs as in production.
    t = time.perf_counter()
    large.audit.sign()
    first_checkpoint_ms = round((time.perf_counter() - t) * 1000, 2)
    large.close()
    large = ctx.stores["large"] = ctx.build(search_store_name("large"))  # the store datagen made
    r = forget(large, tenant_l, f"forget-{n}")
    r["first_checkpoint_ms"] = first_checkpoint_ms
    r["memories"] = n
    r["store_items"] = s.large_store + n
    out["large_store"] = r
    small_n, big_n = str(min(s.forget_sizes)), str(max(s.forget_sizes))
    out["ratio_largest_to_smallest"] = ratio(
        out["subjects"][big_n]["headline_ms"], out["subjects"][small_n]["headline_ms"]
    )
    out["ratio"] = out["subjects"][big_n]["ratio"]
    return out
