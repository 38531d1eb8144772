"""Figure 6d, ``http_nodes``: figure 6's loads against two ``lethe serve`` nodes on PostgreSQL.

The multi-node deployment of ``docs/operations.md``: two nodes (one worker process each,
so two processes on the machine's cores, as figure 6's two workers) on one PostgreSQL
database, the run's OpenBao dev server as their KMS, and Redis for the shared rate limits
when it answers (else each node's own memory storage, and the report says so). On one host
the two nodes share one data dir: the pepper and signing key every node must hold.

The store is fresh: a new database on the PostgreSQL server at ``LETHE_BENCH_POSTGRES_URL``
(default: the local server's ``postgres`` database, trust auth), loaded through the bulk
path with ``Scale.node_tenants`` tenants of one 1,000-item scope each, then ``ANALYZE``d,
and dropped at the end.
Each load runs on both nodes at once, half the connections on each (a ``wrk`` per node,
started together): requests/s is the sum of the two, each latency percentile the worse
node's. The figure is skipped, with its reason, without ``wrk``, the ``bao`` binary or a
PostgreSQL server that answers.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
from pathlib import Path
from typing import Any

from lethe.api.bench import wrk
from lethe.api.bench.context import RunContext, store_settings
from lethe.api.bench.cpu import per_request_us, tree_cpu_seconds
from lethe.api.bench.datagen import generate
from lethe.api.bench.http_load import RATE_LIMIT, _plan, _requests, _wait_ready, meets, spawn_serve
from lethe.api.bench.postgres import NoPostgres, fresh_database, local_server_pid
from lethe.api.bench.rss import peak_rss_tree_mb
from lethe.api.bench.scales import AGENT_ID, PURPOSE
from lethe.api.bench.stats import ratio
from lethe.api.bench.subprocesses import free_port, terminate
from lethe.api.bootstrap import build
from lethe.vault.model import Role

DEFAULT_REDIS = "redis://127.0.0.1:6379/15"
NODES = 2


def measure(ctx: RunContext) -> dict[str, Any]:
    """Search, auth-only and write loads on two nodes; ``skipped`` when a service is missing."""
    if not wrk.available():
        return {"skipped": "no wrk (two nodes are loaded at once by one wrk each)"}
    if ctx.ensure_openbao() is None:
        return {"skipped": "no OpenBao (the nodes' shared KMS)"}
    try:
        with fresh_database() as database_url:
            return _measure(ctx, database_url)
    except NoPostgres as exc:
        return {"skipped": str(exc)}


def _measure(ctx: RunContext, database_url: str) -> dict[str, Any]:
    s = ctx.scale
    name = "nodes-postgres"
    spec = {**ctx.spec(name), "kms": "vault", **ctx.openbao_spec(), "database_url": database_url}
    tenants = [f"n{i:04d}" for i in range(s.node_tenants)]
    c = build(store_settings(spec), create=True)
    try:
        label = f"{len(tenants) * s.scope:,}-item PostgreSQL store"
        generate(ctx, label, name, tenants, *_per_scope(ctx), store=spec)
        # Statistics for the planner, as autovacuum gathers them within a minute or so of a
        # bulk load: without them it nested-looped a scope's postings (108 ms a search, not 5).
        with c.uow.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
        rng = random.Random(16)
        tokens = [
            c.tokens.create(Role.AGENT, tenant, agent_id=AGENT_ID, purposes=[PURPOSE], description="bench")[0]
            for tenant in (tenants * s.concurrency)[: s.concurrency]
        ]
        c.audit.sign()  # as figure 6: the first load must not time the first checkpoint
        postgres = local_server_pid(c.uow.engine)
    finally:
        c.close()
    redis = _redis_url()
    searches = store_settings(spec).searches_at_once  # a PostgreSQL node's default, stated in the report
    env = {
        "search_concurrency": str(searches),
        "data_dir": str(ctx.root / name),
        "database_url": database_url,
        "kms": "vault",
        **ctx.openbao_spec(),
        "rate_limit": RATE_LIMIT,
        "rate_limit_storage": redis or "memory://",
    }
    plan = {
        name: _requests(method, path, body, status)
        for name, method, path, body, status in _plan(ctx, rng)
        if name != "search_subject"
    }
    nodes = [_start(ctx, env, i) for i in range(NODES)]
    runs: dict[str, Any] = {}
    try:
        for proc, port, log in nodes:
            _wait_ready(proc, port, log)
        for name, requests in plan.items():
            with ctx.phase(f"6d HTTP {name}, {NODES} nodes on PostgreSQL"):
                runs[name] = _load_all(ctx, nodes, postgres, tokens, requests)
        peak = max(peak_rss_tree_mb(proc.pid) or 0 for proc, _, _ in nodes)
        ctx.subprocess_rss("lethe serve node (PostgreSQL)", peak)
    finally:
        for proc, _, _ in nodes:
            terminate(proc, timeout=30)
    search, write = runs["search"], runs["write"]
    return {
        "nodes": NODES,
        "workers_per_node": 1,
        "searches_at_once": searches,
        "concurrency": s.concurrency,
        "seconds": s.http_seconds,
        "store_items": len(tenants) * s.scope,
        "scope_items": s.scope,
        "rate_limit_storage": "redis" if redis else "memory (Redis did not answer)",
        "search": search,
        "auth_only": runs["auth_only"],
        "write": write,
        "ratio": ratio(search["requests_per_s"], runs["auth_only"]["requests_per_s"]),
        "met": meets(search, 500, 100),
        "write_met": meets(write, 300, 150),
    }


def _per_scope(ctx: RunContext) -> tuple[int, int]:
    """(subjects, memories per subject) of one scope, as the search stores have them."""
    subjects = ctx.scale.subjects_per_scope
    return subjects, ctx.scale.scope // subjects


def _redis_url() -> str | None:
    """The Redis the nodes share their rate limits through, if it answers (and redis is installed)."""
    url = os.environ.get("LETHE_BENCH_REDIS_URL", DEFAULT_REDIS)
    try:
        import redis

        redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1).ping()
    except Exception:  # not installed, not running: the nodes count their own limits
        return None
    return url


def _start(ctx: RunContext, env: dict[str, str], i: int) -> tuple[subprocess.Popen[bytes], int, Path]:
    port = free_port()
    proc, log_path = spawn_serve(ctx, port, env, f"node-{i}.log", workers=1)
    return proc, port, log_path


def _load_all(
    ctx: RunContext,
    nodes: list[tuple[subprocess.Popen[bytes], int, Path]],
    postgres: int | None,
    tokens: list[str],
    requests: list[dict[str, Any]],
) -> dict[str, Any]:
    """One wrk per node, at once, the connections split between them; the sum and the worse
    tail, and the CPU each node (and the local PostgreSQL server, if ``postgres`` is its pid)
    spent a request. The server's CPU is read around the first node's measured load, which
    starts and ends with the other's, and is shared by both nodes' requests."""
    s = ctx.scale
    share = max(2, s.concurrency // len(nodes))
    results: list[dict[str, Any] | None] = [None] * len(nodes)
    failures: list[BaseException] = []

    def one(i: int, proc: subprocess.Popen[bytes], port: int) -> None:
        workdir = ctx.root / f"wrk-node-{i}"
        workdir.mkdir(exist_ok=True)
        cpu = {"node": lambda: tree_cpu_seconds(proc.pid)}
        if i == 0 and postgres is not None:
            cpu["postgres"] = lambda: tree_cpu_seconds(postgres)
        try:
            results[i] = wrk.run(workdir, port, tokens, requests, share, s.http_seconds, s.http_warmup, cpu)
        except BaseException as exc:  # re-raised below, in the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(i, proc, port)) for i, (proc, port, _) in enumerate(nodes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    done = [r for r in results if r is not None]
    return {
        "requests": sum(r["requests"] for r in done),
        "errors": sum(r["errors"] for r in done),
        "requests_per_s": round(sum(r["requests_per_s"] for r in done), 1),
        "latency": {k: max(r["latency"][k] for r in done) for k in done[0]["latency"]},
        "per_node": [r["requests_per_s"] for r in done],
        "cpu_us_per_request": {
            "nodes": [per_request_us(r["cpu_seconds"]["node"], r["requests"]) for r in done],
            "postgres": per_request_us(
                done[0]["cpu_seconds"].get("postgres"), sum(r["requests"] for r in done)
            ),
        },
        "connections": share * len(done),
        "generator": "wrk",
    }
