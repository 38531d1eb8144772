"""Data generation: the search stores, loaded through the bulk path by worker processes.

``MemoryService.import_batch`` (the same validation, policy, encryption and events as a
write) runs in ``--loaders`` worker processes at once (``python -m lethe.api.bench load``:
spec as JSON on stdin, progress and the result as JSON lines on stdout), each loading
whole tenants, with a 256 MiB SQLite page cache on the loaders' own connections
(``LOADER_CACHE_KIB``; measured 1,138 -> 1,610 items/s at 150k items). The measured
phases use Lethe's engine settings unchanged.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from typing import Any

import sqlalchemy as sa

from lethe.api.bench import page_cache
from lethe.api.bench.context import BenchError, RunContext, store_settings
from lethe.api.bench.rss import peak_rss_mb
from lethe.api.bench.scales import search_store_name
from lethe.api.bench.subprocesses import clean_env
from lethe.api.bench.workload import load_subjects
from lethe.api.bootstrap import build


def make_search_stores(ctx: RunContext) -> None:
    """The small and the large store of figure 3 (and 6), one scope per tenant."""
    s = ctx.scale
    per_subject = s.scope // s.subjects_per_scope
    for key, size in (("small", s.small_store), ("large", s.large_store)):
        name = search_store_name(key)
        with ctx.phase(f"3 generate {size:,}-item store"):
            # Migrates and creates the key material; the loader processes then share it.
            ctx.stores[key] = ctx.build(name)
            ctx.tenants[key] = [f"t{i:05d}" for i in range(size // s.scope)]
            generate(ctx, f"{size:,}-item store", name, ctx.tenants[key], s.subjects_per_scope, per_subject)
    with ctx.phase("3 read the search stores into the page cache"):
        stores = [ctx.root / search_store_name(k) for k in ("small", "large")]
        ctx.results["page_cache_warmup_s"] = page_cache.warm(stores)
        ctx.results["page_cache_warmup_large_bytes"] = ctx.stores["large"].compactor.store_bytes()
        ctx.results["page_cache_resident_after_warmup"] = page_cache.resident_share(stores[1:])


def generate(
    ctx: RunContext,
    label: str,
    name: str,
    tenants: list[str],
    subjects: int,
    per_subject: int,
    store: dict[str, Any] | None = None,
) -> None:
    """Load ``tenants`` of store ``name`` (``store``: how to reach it, if not by ``ctx.spec``)
    through the bulk path in ``ctx.loaders`` processes."""
    workers = min(ctx.loaders, len(tenants))
    total = len(tenants) * subjects * per_subject
    err_dir = ctx.root / "logs"
    err_dir.mkdir(exist_ok=True)
    procs = []
    for w in range(workers):
        spec = {
            "store": store or ctx.spec(name),
            "tenants": tenants[w::workers],
            "subjects": subjects,
            "per_subject": per_subject,
            "seed": 1000 + w,
            "cache_kib": ctx.loader_cache_kib,
        }
        errf = (err_dir / f"load-{name}-{w}.log").open("w")
        p = subprocess.Popen(
            [sys.executable, "-m", "lethe.api.bench", "load"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errf,
            env=clean_env(),
            text=True,
        )
        errf.close()
        assert p.stdin is not None
        p.stdin.write(json.dumps(spec))
        p.stdin.close()
        procs.append(p)
    done = [0] * workers
    finals: list[dict[str, Any] | None] = [None] * workers

    def reader(i: int, p: subprocess.Popen[str]) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            msg = json.loads(line)
            if "progress" in msg:
                done[i] = msg["progress"]
            else:
                finals[i] = msg

    threads = [threading.Thread(target=reader, args=(i, p), daemon=True) for i, p in enumerate(procs)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    last = 0.0
    while any(t.is_alive() for t in threads):
        time.sleep(0.5)
        if time.perf_counter() - last > ctx.progress_every:
            last = time.perf_counter()
            n = sum(done)
            per_s = n / (last - start) if last > start else 0
            ctx.say(f"  generating {label}: {n:,}/{total:,} items ({per_s:,.0f}/s)")
    for p in procs:
        p.wait()
    seconds = time.perf_counter() - start
    if any(p.returncode != 0 for p in procs) or any(f is None for f in finals):
        tails = [(err_dir / f"load-{name}-{w}.log").read_text()[-2000:] for w in range(workers)]
        raise BenchError(f"a loader of {label} failed:\n" + "\n".join(tails))
    items = sum(f["items"] for f in finals if f)
    ctx.results["data_generation"][label] = {
        "items": items,
        "tenants": len(tenants),
        "subjects": len(tenants) * subjects,
        "loaders": workers,
        "seconds": round(seconds, 1),
        "items_per_s": round(items / seconds, 1),
    }
    ctx.subprocess_rss(f"loader ({label})", max((f.get("peak_rss_mb") or 0) for f in finals if f))


def load_main(spec: dict[str, Any]) -> None:
    """A data-generation worker: load whole tenants through the bulk path, report progress."""
    c = build(store_settings(spec["store"]))
    if spec.get("cache_kib") and c.uow.engine.dialect.name == "sqlite":
        # A larger page cache for this loader's connections only: the four random-UUID
        # indexes (event id, memory id twice, index row) outgrow SQLite's 2 MiB default.
        @sa.event.listens_for(c.uow.engine, "connect")
        def _cache(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.execute(f"PRAGMA cache_size=-{int(spec['cache_kib'])}")

        c.uow.engine.dispose()
    rng = random.Random(spec["seed"])
    subjects = [f"subject-{i}" for i in range(spec["subjects"])]
    start = time.perf_counter()
    n = 0
    try:
        for tenant in spec["tenants"]:
            n += load_subjects(c.memories, tenant, subjects, spec["per_subject"], rng)
            print(json.dumps({"progress": n}), flush=True)
    finally:
        c.close()
    print(
        json.dumps({"items": n, "seconds": time.perf_counter() - start, "peak_rss_mb": peak_rss_mb()}),
        flush=True,
    )
