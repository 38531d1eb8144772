"""Figure 6, ``http_search``: authenticated search over HTTP against a real ``lethe serve``.

The server runs as a subprocess over the large store with ``Scale.http_workers`` worker
processes; the load comes from a separate process, ``wrk`` when it is installed (a C load
generator, so the load takes little of the cores the server is measured on), else
``loadgen`` (``Scale.concurrency`` threads, keep-alive connections), bounded in time.
Baselines: an authenticated request that does no search (``GET`` of a missing memory),
and, with ``lethe bench --previous DIR``, the same search load against an earlier
release's ``lethe serve`` (a checkout in DIR) on the same store, workers and machine, in
the same run: "today's" figure the issue's ratio is taken against.
"""

from __future__ import annotations

import http.client
import json
import random
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from lethe.api.bench import wrk
from lethe.api.bench.context import BenchError, RunContext
from lethe.api.bench.cpu import per_request_us, tree_cpu_seconds
from lethe.api.bench.rss import peak_rss_tree_mb
from lethe.api.bench.scales import AGENT_ID, PURPOSE, TARGETS, search_store_name
from lethe.api.bench.stats import ratio
from lethe.api.bench.subprocesses import clean_env, free_port, terminate
from lethe.api.bench.workload import query_words
from lethe.api.bootstrap import Container
from lethe.vault.erasure.compaction_disk import reclaim_space
from lethe.vault.model import Role
from lethe.vault.store.schema import downgrade, schema_state, upgrade
from lethe.vault.store.tables import memories

# The per-token limit (600/minute by default) would cap the load at 160 rps; the limiter
# still runs on every request.
RATE_LIMIT = "100000000/minute"
SERVE = "from lethe.api.cli import app; app(prog_name='lethe')"
Body = Callable[[], dict[str, Any]] | None  # a request body maker; None: no body


def measure(ctx: RunContext) -> dict[str, Any]:
    """Search, one-subject search and auth-only load, each in its own phase."""
    s = ctx.scale
    c = ctx.stores["large"]
    rng = random.Random(14)
    tenants = [rng.choice(ctx.tenants["large"]) for _ in range(s.concurrency)]  # a scope per token
    tokens = [
        c.tokens.create(Role.AGENT, t, agent_id=AGENT_ID, purposes=[PURPOSE], description=f"bench {i}")[0]
        for i, t in enumerate(tenants)
    ]
    # Every server signs the log's head when it starts and it has grown; the generated store
    # never had one, so sign it here, or the first load would time that instead of searches.
    c.audit.sign()
    port = free_port()
    server, log_path = _serve(ctx, port)
    runs: dict[str, Any] = {}
    plan = {
        name: _requests(method, path, body, status) for name, method, path, body, status in _plan(ctx, rng)
    }
    try:
        _wait_ready(server, port, log_path)
        for name, requests in plan.items():
            with ctx.phase(f"6 HTTP {name} (server + load generator subprocesses)") as info:
                runs[name] = _load(ctx, port, tokens, requests, server=server.pid)
                info["load_generator_peak_rss_mb"] = runs[name].get("peak_rss_mb")
        server_rss = peak_rss_tree_mb(server.pid)  # its largest process, after every load
        searched = sorted(set(tenants))
        soak = _soak(ctx, server.pid, port, tokens, plan, searched) if ctx.soak_seconds > 0 else None
    finally:
        terminate(server, timeout=30)
    ctx.subprocess_rss("lethe serve (largest process)", server_rss)
    rss = [r.get("peak_rss_mb") or 0 for r in runs.values()]
    if any(rss):
        ctx.subprocess_rss("load generator", max(rss))
    previous = None
    if ctx.previous is not None:
        try:
            previous = _previous_release(ctx, tokens, plan["search"])
        except BenchError as exc:  # this release's figures stand; the comparison says why it is missing
            previous = {"error": str(exc)}
    head = runs["search"]
    return {
        "concurrency": s.concurrency,
        "seconds": s.http_seconds,
        "max_requests": s.http_max_requests,
        "store_items": s.large_store,
        "scope_items": s.scope,
        "search": head,
        "search_subject": runs["search_subject"],
        "auth_only": runs["auth_only"],
        "write": runs["write"],
        "write_met": meets(runs["write"], 300, 150),
        "requests_per_s": head["requests_per_s"],
        "p99_ms": head["latency"]["p99_ms"],
        "ratio": ratio(head["requests_per_s"], runs["auth_only"]["requests_per_s"]),
        "target": TARGETS["http_search"],
        "met": meets(head, 500, 100),
        "server_peak_rss_mb": server_rss,
        "soak": soak,
        "rate_limit": RATE_LIMIT,
        "workers": s.http_workers,
        "generator": head.get("generator", "loadgen"),
        "previous": previous,
        "previous_release": _describe(ctx.previous) if ctx.previous is not None else None,
        "ratio_previous": (
            ratio(head["requests_per_s"], previous["requests_per_s"])
            if previous and "requests_per_s" in previous
            else None
        ),
    }


def _previous_release(ctx: RunContext, tokens: list[str], search: list[dict[str, Any]]) -> dict[str, Any]:
    """The search load against the ``--previous`` release's server on the same store, its schema
    taken back to that release's newest migration for the run and brought forward after (and
    the file vacuumed, so the figures after it read a store as compact as before)."""
    assert ctx.previous is not None
    engine = ctx.stores["large"].uow.engine
    ours = schema_state(engine).current
    theirs = _schema_head(ctx.previous)
    try:
        if theirs != ours:
            downgrade(engine, theirs)
        port = free_port()
        server, log_path = _serve(ctx, port, previous=ctx.previous)
        try:
            _wait_ready(server, port, log_path)
            with ctx.phase("6 HTTP search, previous release (server + load generator subprocesses)"):
                return _load(ctx, port, tokens, search)
        finally:
            terminate(server, timeout=30)
    finally:
        if theirs != ours:
            upgrade(engine)
            # The round trip rewrote tables (0018's postings twice) and left their old pages free
            # in the file, which later figures would read (a forget's byte scan reads every page).
            with ctx.phase("6b VACUUM the large store after the schema round trip"):
                reclaim_space(engine)


def _soak(
    ctx: RunContext,
    pid: int,
    port: int,
    tokens: list[str],
    plan: dict[str, list[dict[str, Any]]],
    searched: list[str],
) -> dict[str, Any]:
    """Figure 6's search load kept on the same server for ``ctx.soak_seconds`` (with a governed
    write load for a sixth of each minute), the resident memory of its largest process read
    after each minute: whether a server's memory settles or keeps growing under load. The
    writes land in the scopes searched (the tokens' tenants), so those are counted before and
    after: a worker keeps the scopes it searches, up to its vector cache's bound."""
    c = ctx.stores["large"]
    scope_rows = [_memories_of(c, searched)]
    samples: list[dict[str, Any]] = []
    errors = requests = 0
    start = time.monotonic()
    with ctx.phase("6 HTTP soak (server + load generator subprocesses)"):
        while (elapsed := time.monotonic() - start) < ctx.soak_seconds - 1:
            minute = min(60.0, ctx.soak_seconds - elapsed)
            for name, share in (("search", 5 / 6), ("write", 1 / 6)):
                run = _load(ctx, port, tokens, plan[name], seconds=minute * share, warmup=0)
                errors += run["errors"]
                requests += run["requests"]
            samples.append(
                {
                    "minutes": round((time.monotonic() - start) / 60, 2),
                    "rss_mb": peak_rss_tree_mb(pid, "VmRSS"),
                    "peak_rss_mb": peak_rss_tree_mb(pid),
                }
            )
            ctx.say(f"  soak: {samples[-1]['minutes']} min, largest process {samples[-1]['rss_mb']} MiB")
    last = samples[-1] if samples else {}
    limit_mib = 250e6 / 2**20  # the target is 250 MB
    scope_rows.append(_memories_of(c, searched))
    return {
        "seconds": round(time.monotonic() - start, 1),
        "scopes_searched": len(searched),
        "scope_memories": scope_rows,  # before and after
        "vector_cache_entries": c.search.keyring.opened.capacity,
        "requests": requests,
        "errors": errors,
        "samples": samples,
        "rss_mb": last.get("rss_mb"),
        "peak_rss_mb": last.get("peak_rss_mb"),
        "target": "<= 250 MB after 10 minutes of the HTTP load",
        "met": last.get("rss_mb") is not None and ctx.soak_seconds >= 600 and last["rss_mb"] <= limit_mib,
    }


def _memories_of(c: Container, tenants: list[str]) -> int:
    """How many memories these tenants' scopes hold (each tenant is one scope here)."""
    with c.uow.read() as conn:
        return int(
            conn.execute(sa.select(sa.func.count()).where(memories.c.tenant_id.in_(tenants))).scalar_one()
        )


def _schema_head(checkout: Path) -> str:
    """The newest migration of a checkout (the revision no other revision comes after)."""
    found = re.compile(r'^(down_)?revision = "([^"]+)"', re.M)
    revisions: set[str] = set()
    parents: set[str] = set()
    source = checkout / "src" / "lethe" if (checkout / "src" / "lethe").is_dir() else checkout
    for path in (source / "vault" / "store" / "migrations" / "versions").glob("*.py"):
        for down, rev in found.findall(path.read_text()):
            (parents if down else revisions).add(rev)
    heads = revisions - parents
    if len(heads) != 1:
        raise BenchError(f"--previous {checkout}: cannot tell its schema revision ({sorted(heads)})")
    return heads.pop()


def meets(run: dict[str, Any], per_s: float, p99_ms: float) -> bool:
    """Whether a load was served at ``per_s`` requests/s or more, p99 within ``p99_ms``, no error."""
    return bool(run["requests_per_s"] >= per_s and run["latency"]["p99_ms"] <= p99_ms and run["errors"] == 0)


def _plan(ctx: RunContext, rng: random.Random) -> list[tuple[str, str, str | None, Body, int]]:
    """(name, method, path, body, status served) of each load; a None path is a fresh missing memory."""
    subjects = ctx.scale.subjects_per_scope

    def search() -> dict[str, Any]:
        return {"query": query_words(rng), "purpose": PURPOSE, "limit": 10, "token_budget": 2000}

    def search_subject() -> dict[str, Any]:
        return {
            "query": query_words(rng),
            "purpose": PURPOSE,
            "subject_id": f"subject-{rng.randrange(subjects)}",
            "limit": 10,
            "token_budget": 2000,
        }

    def write() -> dict[str, Any]:  # a governed write; its idempotency key is fresh per request
        return {
            "subject_id": f"subject-{rng.randrange(subjects)}",
            "purpose": PURPOSE,
            "kind": "fact",
            "content": f"{query_words(rng)} {query_words(rng)} #http",
            "provenance": {"source_type": "user_statement", "source_ref": "bench/http"},
            "confidence": 0.5,
            "expected_version": 0,
            "idempotency_key": wrk.UNIQUE,
        }

    return [
        ("search", "POST", "/v1/memories/search", search, 200),
        ("search_subject", "POST", "/v1/memories/search", search_subject, 200),
        ("auth_only", "GET", None, None, 404),
        ("write", "POST", "/v1/memories", write, 201),
    ]


def _requests(method: str, path: str | None, body: Body, expected: int) -> list[dict[str, Any]]:
    """64 prepared requests of one load (a None path: a fresh missing memory each)."""
    return [
        {
            "method": method,
            "path": path or f"/v1/memories/{uuid.uuid4()}",
            "body": json.dumps(body()) if body else None,
            "expected": expected,
        }
        for _ in range(64)
    ]


def _load(
    ctx: RunContext,
    port: int,
    tokens: list[str],
    requests: list[dict[str, Any]],
    seconds: float | None = None,
    warmup: float | None = None,
    server: int | None = None,
) -> dict[str, Any]:
    """One load of ``requests`` (the scale's duration and warm-up unless given); with
    ``server`` (the serving process's pid) and ``wrk``, the CPU it and its workers spent a
    request (``cpu_us_per_request``)."""
    s = ctx.scale
    seconds = s.http_seconds if seconds is None else seconds
    warmup = s.http_warmup if warmup is None else warmup
    if not wrk.available():
        return _loadgen(ctx, port, tokens, requests, seconds, warmup)
    if server is None:
        return wrk.run(ctx.root, port, tokens, requests, s.concurrency, seconds, warmup)
    cpu = {"server": lambda: tree_cpu_seconds(server)}
    run = wrk.run(ctx.root, port, tokens, requests, s.concurrency, seconds, warmup, cpu)
    run["cpu_us_per_request"] = {"server": per_request_us(run["cpu_seconds"]["server"], run["requests"])}
    return run


def _serve(ctx: RunContext, port: int, previous: Path | None = None) -> tuple[subprocess.Popen[bytes], Path]:
    """``lethe serve`` on the large store, its output in ``logs/serve.log`` under the root;
    ``previous``: the release checked out there instead of this one (its folders mapped to
    ``lethe.*`` through a path of symlinks: ``src/lethe/<folder>``, or ``<folder>`` in a
    checkout from before the ``src/`` layout)."""
    env = {"data_dir": str(ctx.root / search_store_name("large")), "kms": ctx.kms, "rate_limit": RATE_LIMIT}
    if ctx.kms == "vault":
        env |= ctx.openbao_spec()
    extra: dict[str, str] = {}
    if previous is not None:
        extra["PYTHONPATH"] = str(_release_path(ctx.root / "previous-release", previous))
    log_name = "serve-previous.log" if previous else "serve.log"
    return spawn_serve(ctx, port, env, log_name, ctx.scale.http_workers, extra)


def spawn_serve(
    ctx: RunContext,
    port: int,
    lethe: dict[str, str],
    log_name: str,
    workers: int,
    extra: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], Path]:
    """A ``lethe serve`` subprocess on loopback with these ``LETHE_*`` settings (and ``extra``
    variables), its output in ``logs/<log_name>`` under the root."""
    log_path = ctx.root / "logs" / log_name
    log_path.parent.mkdir(exist_ok=True)
    args = ["--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**clean_env(**lethe), **(extra or {})},
        )
    return server, log_path


def _describe(checkout: Path) -> str:
    """The checkout and, if git knows it, its commit."""
    out = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    )
    return f"{checkout} at {out.stdout.strip()}" if out.returncode == 0 else str(checkout)


def _release_path(root: Path, checkout: Path) -> Path:
    """A folder whose ``lethe/<folder>`` entries link to ``checkout``'s folders (put first on
    PYTHONPATH, it is what ``import lethe.api`` finds)."""
    package = root / "lethe"
    package.mkdir(parents=True, exist_ok=True)
    source = checkout / "src" / "lethe" if (checkout / "src" / "lethe").is_dir() else checkout
    for folder in ("vault", "keys", "api", "client", "integrations"):
        link = package / folder
        if not link.exists() and (source / folder).is_dir():
            link.symlink_to((source / folder).resolve(), target_is_directory=True)
    if not (package / "api").exists():
        raise BenchError(f"--previous {checkout}: no api/ folder there (a checkout of Lethe?)")
    return root


def _wait_ready(server: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise BenchError(f"lethe serve exited with {server.returncode}: {log_path.read_text()[-2000:]}")
        with suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                conn.close()
                return
            conn.close()
        time.sleep(0.2)
    raise BenchError("lethe serve did not become ready within 120 s")


def _loadgen(
    ctx: RunContext,
    port: int,
    tokens: list[str],
    requests: list[dict[str, Any]],
    seconds: float,
    warmup: float,
) -> dict[str, Any]:
    """Run ``python -m lethe.api.bench loadgen`` once; its last stdout line is the result."""
    s = ctx.scale
    spec = {
        "host": "127.0.0.1",
        "port": port,
        "tokens": tokens,
        "requests": requests,
        "concurrency": s.concurrency,
        "seconds": seconds,
        "warmup": warmup,
        "max_requests": s.http_max_requests,
    }
    out = subprocess.run(
        [sys.executable, "-m", "lethe.api.bench", "loadgen"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=seconds + warmup + 120,
    )
    if out.returncode != 0:
        raise BenchError(f"the load generator failed: {out.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])  # the loadgen's last line
    return figures
