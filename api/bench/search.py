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
from lethe.vault.memory.bulk import WORDS
from lethe.vault.memory.search import SearchService
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
    long_queries = _query_lengths(ctx, rng)
    small, large = percentiles(lat["small"]), percentiles(lat["large"])
    r = ratio(large["p95_ms"], small["p95_ms"])
    return {
        "page_cache_warmup_s": ctx.results.get("page_cache_warmup_s"),
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
        "recall": (ctx.stores["large"].search.vectors.model and "hybrid") or "lexical",
        "query_terms": long_queries,
    }


def _query_lengths(ctx: RunContext, rng: random.Random) -> dict[str, Any]:
    """Search cost by query length on the large store: two terms against sixty-four (every
    word of the bench vocabulary, the rest words no memory holds), hybrid as configured and
    lexical only (the same store and keys through a search service without an embedder).
    Interleaved, so noise hits each mode and length alike, each after an untimed query of
    the same scope (so both find its vectors cached alike); ratio of the p50s."""
    c = ctx.stores["large"]
    lexical = SearchService(c.uow, c.keyring, c.pseudonyms)
    services = {
        "hybrid" if c.search.vectors.embedder is not None else "configured": c.search,
        "lexical": lexical,
    }
    n = max(20, ctx.scale.queries // 5)
    lat: dict[str, dict[int, list[float]]] = {m: {2: [], 64: []} for m in services}

    def text(terms: int) -> str:
        if terms == 2:
            return query_words(rng)
        extra = [f"absent{i}x{rng.randrange(10**6)}" for i in range(64 - len(WORDS))]
        return " ".join([*WORDS, *extra])

    for i in range(n + 5):
        tenant = rng.choice(ctx.tenants["large"])
        lengths = (2, 64) if i % 2 == 0 else (64, 2)
        for mode, service in services.items():
            # One query first, untimed: both lengths then find the scope as warm as each other.
            service.search(agent_caller(tenant), SearchQuery(query=text(2), purpose=PURPOSE))
            for terms in lengths:
                q = SearchQuery(query=text(terms), purpose=PURPOSE)
                t = time.perf_counter()
                service.search(agent_caller(tenant), q)
                if i >= 5:  # the first rounds warm both up
                    lat[mode][terms].append(time.perf_counter() - t)
    out: dict[str, Any] = {"queries": n}
    for mode, by_terms in lat.items():
        p2, p64 = percentiles(by_terms[2]), percentiles(by_terms[64])
        out[mode] = {"terms_2": p2, "terms_64": p64, "ratio_p50": ratio(p64["p50_ms"], p2["p50_ms"])}
    return out


def _alternating(i: int) -> tuple[str, str]:
    return STORES if i % 2 == 0 else (STORES[1], STORES[0])
