"""Figure 3, ``search_latency``: scoped search p50/p95/p99 in a small and a large store.

A scope of ``Scale.scope`` items (one tenant's agent and purpose) in a store of 10,000
items and in a large one, both built through the bulk import path (``datagen``); the
queries alternate between the stores so that noise on the machine hits both. Ratio
large/small of p95.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from lethe.api.bench.context import RunContext
from lethe.api.bench.scales import PURPOSE, TARGETS
from lethe.api.bench.stats import percentiles, ratio
from lethe.api.bench.workload import agent_caller, query_words
from lethe.vault.model import SearchQuery

STORES = ("small", "large")


def measure(ctx: RunContext) -> dict[str, Any]:
    """Warm both stores up, then time scope queries and (half as many) one-subject queries."""
    s = ctx.scale
    rng = random.Random(13)
    lat: dict[str, list[float]] = {k: [] for k in STORES}
    lat_subject: dict[str, list[float]] = {k: [] for k in STORES}
    hits: dict[str, list[int]] = {k: [] for k in STORES}

    def one(key: str, record: bool, subject: bool = False) -> None:
        tenant = rng.choice(ctx.tenants[key])
        q = SearchQuery(
            query=query_words(rng),
            purpose=PURPOSE,
            subject_id=f"subject-{rng.randrange(s.subjects_per_scope)}" if subject else None,
        )
        t = time.perf_counter()
        result = ctx.stores[key].search.search(agent_caller(tenant), q)
        dt = time.perf_counter() - t
        if record:
            (lat_subject if subject else lat)[key].append(dt)
            if not subject:
                hits[key].append(len(result.items))

    for _ in range(20):  # warm up both
        one("small", False)
        one("large", False)
    for i in range(s.queries):  # alternate, so noise on the machine hits both stores
        for key in _alternating(i):
            one(key, True)
    for i in range(s.queries // 2):
        for key in _alternating(i):
            one(key, True, subject=True)
    small, large = percentiles(lat["small"]), percentiles(lat["large"])
    r = ratio(large["p95_ms"], small["p95_ms"])
    return {
        "scope_items": s.scope,
        "small_store_items": s.small_store,
        "large_store_items": s.large_store,
        "queries_per_store": len(lat["small"]),
        "small": small,
        "large": large,
        "ratio": r,
        "ratio_p50": ratio(large["p50_ms"], small["p50_ms"]),
        "target": TARGETS["search_latency"],
        "met": r <= 1.5 and large["p95_ms"] <= 20 and small["p95_ms"] <= 20,
        "mean_items_returned": round(statistics.mean(hits["large"]), 2) if hits["large"] else 0,
        "subject_scope_items": s.scope // s.subjects_per_scope,
        "subject_small": percentiles(lat_subject["small"]),
        "subject_large": percentiles(lat_subject["large"]),
    }


def _alternating(i: int) -> tuple[str, str]:
    return STORES if i % 2 == 0 else (STORES[1], STORES[0])
