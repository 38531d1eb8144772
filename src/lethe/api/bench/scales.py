"""What one run measures and how much: the scales, the figure names and the design's targets.

The figure names are the keys of ``results["figures"]`` in the JSON report; readers of
``docs/performance.md`` and the smoke test rely on them, so they never change silently.
"""

from __future__ import annotations

from dataclasses import dataclass

AGENT_ID = "agent-1"
PURPOSE = "support"
FIGURES = (
    "write_throughput",
    "write_throughput_postgres",
    "vault_envelope",
    "search_latency",
    "forget_latency",
    "compaction",
    "replay",
    "http_search",
    "peak_rss",
)
TARGETS = {
    "write_throughput": "ratio >= 0.5",
    "write_throughput_postgres": "ratio >= 0.5",
    "vault_envelope": "ratio >= 20",
    "search_latency": "ratio <= 1.5 and p95 <= 20 ms",
    "http_search": ">= 500 requests/s and p99 <= 100 ms (2 cores)",
}


@dataclass(frozen=True)
class Scale:
    """How many operations each figure times; ``small`` runs in minutes, ``full`` is the report's."""

    name: str
    writes: int  # governed writes timed (and as many baseline inserts)
    vault_writes: int  # durable writes per design on OpenBao
    crypto_ops: int  # per-record encryptions per design on OpenBao
    small_store: int
    large_store: int
    scope: int  # items in one search scope (a tenant's agent and purpose)
    subjects_per_scope: int
    queries: int  # per store
    forget_sizes: tuple[int, ...]
    compaction_subjects: int
    compaction_per_subject: int
    http_seconds: float
    http_warmup: float
    http_max_requests: int
    concurrency: int = 16
    http_workers: int = 2  # `lethe serve --workers`: one per core of the 2-core machine the targets are for
    node_tenants: int = 4  # tenants (one scope each) of figure 6d's PostgreSQL store
    write_rounds: int = 5


SCALES = {
    "small": Scale(
        "small",
        writes=200,
        vault_writes=100,
        crypto_ops=1_000,
        small_store=10_000,
        large_store=100_000,
        scope=1_000,
        subjects_per_scope=4,
        queries=300,
        forget_sizes=(10, 100, 1_000),
        compaction_subjects=4,
        compaction_per_subject=5_000,
        http_seconds=5.0,
        http_warmup=1.0,
        http_max_requests=20_000,
    ),
    "full": Scale(
        "full",
        writes=1_000,
        vault_writes=300,
        crypto_ops=5_000,
        small_store=10_000,
        large_store=1_000_000,
        scope=1_000,
        subjects_per_scope=4,
        queries=1_000,
        forget_sizes=(10, 1_000, 10_000),
        compaction_subjects=5,
        compaction_per_subject=10_000,
        http_seconds=10.0,
        http_warmup=2.0,
        http_max_requests=100_000,
        node_tenants=10,
    ),
}


def search_store_name(key: str) -> str:
    """The data dir's name (under the run's root) of figure 3's ``small`` or ``large`` store,
    which figures 4 and 6 use too."""
    return f"search-{key}"
