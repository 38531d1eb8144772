"""The HTTP sections of ``docs/performance.md``: one node under load, several nodes."""

from __future__ import annotations

from typing import Any

from lethe.api.bench.report_text import lats, para, table
from lethe.api.bench.summary import fmt


def http(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    h = figs.get("http_search", {})
    out = ["## 6. HTTP"]
    if "search" not in h:
        return out
    loads = [
        (f"search, scope {h['scope_items']:,}", h["search"]),
        ("search, one subject", h["search_subject"]),
        ("auth only (404)", h["auth_only"]),
    ]
    if h.get("write"):
        loads.append(("governed write (201)", h["write"]))
    measured_previous = bool(h.get("previous")) and "error" not in h["previous"]
    if measured_previous:
        loads.append((f"search, scope {h['scope_items']:,}, previous release", h["previous"]))
    workers = h.get("workers", 1)
    generator = (
        "`wrk` (2 threads, one keep-alive connection each, the agent tokens in turn)"
        if h.get("generator") == "wrk"
        else "a separate Python process (one thread, keep-alive connection and agent token each)"
    )
    previous = []
    if h.get("previous") and not measured_previous:
        previous = [para(f"The previous release was not measured: {h['previous']['error']}")]
    if measured_previous:
        previous = [
            para(
                f"The previous release (checkout `{h['previous_release']}`, `lethe bench --previous`) served",
                "the same search load on the same store with the same workers in this run:",
                f"{fmt(h['previous']['requests_per_s'])} req/s; this release serves",
                f"{fmt(h['ratio_previous'], 2)}x as many.",
            )
        ]
    return [
        *out,
        para(
            f"A real `lethe serve --workers {workers}` subprocess (uvicorn on uvloop and httptools)",
            f"on a free loopback port, over the {h['store_items']:,}-item store; the load comes from",
            f"{generator}:",
            f"{h['concurrency']} connections, {h['seconds']:g} s after a warm-up. The per-token",
            f"rate limit is raised to `{h['rate_limit']}` so it does not cap the load (the limiter",
            "still runs on every request). Latency as the client sees it. Baseline: an authenticated",
            "`GET` of a missing memory (404): the token looked up, the rate limit and the routing, no",
            "search. A search or write whose token its worker accepted before skips that lookup and",
            "reads the token's revocation in its own first statement (`vault/access/known_tokens.py`).",
        ),
        table(
            ["", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors", "server CPU µs/req"],
            [
                [
                    label,
                    f"{r['requests']:,}",
                    fmt(r["requests_per_s"]),
                    *lats(r["latency"]),
                    r["errors"],
                    _cpu(r, "server"),
                ]
                for label, r in loads
            ],
        ),
        *previous,
        para(
            "Server CPU: the user and system time of the server's processes (supervisor and",
            "workers, from `/proc`) during the measured load, over the requests served in it.",
        ),
        para(
            f"Ratio search/auth-only throughput {fmt(h['ratio'], 3)}. Target: >= 500 req/s and p99",
            "<= 100 ms on 2 cores (the load generator runs on the same cores).",
        ),
        *(
            [
                para(
                    "Governed writes: `POST /v1/memories` of a new memory (a fresh idempotency key per",
                    "request) into the same store, every worker taking SQLite's one write lock in turn;",
                    f"{fmt(h['write']['requests_per_s'])} req/s, p99",
                    f"{fmt(h['write']['latency']['p99_ms'])} ms with {workers} workers. Target: >= 300",
                    "req/s and p99 <= 150 ms.",
                )
            ]
            if h.get("write")
            else []
        ),
    ]


def _cpu(run: dict[str, Any], key: str) -> str:
    """A load's CPU microseconds a request for ``key`` (a list: per node), or blank if unread."""
    value = (run.get("cpu_us_per_request") or {}).get(key)
    if isinstance(value, list):
        return " + ".join(fmt(v) if v is not None else "?" for v in value) if value else ""
    return fmt(value) if value is not None else ""


def http_nodes(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    n = figs.get("http_nodes", {})
    out = ["### 6d. Two nodes on PostgreSQL"]
    if "search" not in n:
        return [*out, para(f"Not measured in this run: {n.get('skipped') or n.get('error') or 'no figure'}.")]
    loads = [
        (f"search, scope {n['scope_items']:,}", n["search"]),
        ("auth only (404)", n["auth_only"]),
        ("governed write (201)", n["write"]),
    ]
    return [
        *out,
        para(
            f"{n['nodes']} `lethe serve` nodes ({n['workers_per_node']} worker each, running",
            f"{n.get('searches_at_once', 1)} searches at once) on one fresh",
            f"PostgreSQL database ({n['store_items']:,} items, one {n['scope_items']:,}-item scope per",
            "tenant, `ANALYZE`d after the bulk load), the run's OpenBao dev server as their KMS,",
            f"rate limits in {n['rate_limit_storage']}; both nodes share one data dir (pepper and",
            f"signing key). Each load runs on both nodes at once, {n['concurrency'] // n['nodes']}",
            "connections on each (a `wrk` per node): req/s is the sum, each latency column the",
            "worse node's.",
        ),
        table(
            [
                "",
                "requests",
                "req/s",
                "per node",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "max ms",
                "errors",
                "node CPU µs/req",
                "PostgreSQL CPU µs/req",
            ],
            [
                [
                    label,
                    f"{r['requests']:,}",
                    fmt(r["requests_per_s"]),
                    " + ".join(fmt(x) for x in r["per_node"]),
                    *lats(r["latency"]),
                    r["errors"],
                    _cpu(r, "nodes"),
                    _cpu(r, "postgres"),
                ]
                for label, r in loads
            ],
        ),
        para(
            "CPU a request, read from `/proc` around the measured load: each node's processes over",
            "its own requests; the PostgreSQL server's (every backend and background process, when",
            "it runs on this machine) over both nodes' requests. What is left of the two cores went",
            "to Redis, the `wrk`s and the kernel.",
        ),
        para(
            "Targets as figure 6: search >= 500 req/s with p99 <= 100 ms, writes >= 300 req/s with",
            "p99 <= 150 ms.",
        ),
    ]
