"""Figure 3, ``search_latency``: scoped search p50/p95/p99 in a small and a large store.

A scope of ``Scale.scope`` items (one tenant's agent and purpose) in a store of 10,000
items and in a large one, both built through the bulk import path (``datagen``); the
queries alternate between the stores so that noise on the machine hits both. What the
store's size costs is measured with everything else alike:
- warm: the large store's queries go to as many of its scopes as the small store has,
  so the opened-vector cache holds both sides' scopes (ratio large/small of p95);
- cold: both stores through a search service without that cache, so every query opens
  its scope's vectors from their ciphertext (ratio large/small of p95);
- and, as a server meets it, queries over every scope of the large store: at full scale
  1,000 scopes of 1,000 vectors do not fit a cache of 40,000, so most of these are cold.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from lethe.api.bench import page_cache
from lethe.api.bench.context import RunContext
from lethe.api.bench.scales import PURPOSE, TARGETS, search_store_name
from lethe.api.bench.stats import percentiles, ratio
from lethe.api.bench.workload import agent_caller, query_words
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.opened_vectors import OpenedVectors
from lethe.vault.memory.bulk import WORDS
from lethe.vault.memory.search import SearchService
from lethe.vault.model import SearchQuery

STORES = ("small", "large")


def measure(ctx: RunContext) -> dict[str, Any]:
    """Time scope queries three ways (see the module), then one-subject queries and lengths."""
    s = ctx.scale
    rng = random.Random(13)
    # The large store's share of the comparison: as many of its tenants as the small store
    # has, spread over it, so both stores' queries meet caches that hold their scopes alike.
    small_tenants = ctx.tenants["small"]
    step = max(1, len(ctx.tenants["large"]) // len(small_tenants))
    tenants = {"small": small_tenants, "large": ctx.tenants["large"][::step][: len(small_tenants)]}
    services = {k: ctx.stores[k].search for k in STORES}
    cold = {k: _uncached(ctx.stores[k].search) for k in STORES}
    lat: dict[str, list[float]] = {k: [] for k in (*STORES, "large_all", "cold_small", "cold_large")}
    lat_subject: dict[str, list[float]] = {k: [] for k in STORES}
    hits: list[int] = []

    def one(service: SearchService, pool: list[str], into: list[float] | None, subject: bool = False) -> None:
        q = SearchQuery(
            query=query_words(rng),
            purpose=PURPOSE,
            subject_id=f"subject-{rng.randrange(s.subjects_per_scope)}" if subject else None,
        )
        caller = agent_caller(rng.choice(pool))
        t = time.perf_counter()
        result = service.search(caller, q)
        dt = time.perf_counter() - t
        if into is not None:
            into.append(dt)
            if into is lat["large"]:
                hits.append(len(result.items))

    for _ in range(2):  # warm up: every scope of the comparison once, twice
        for key in STORES:
            for tenant in tenants[key]:
                one(services[key], [tenant], None)
    for i in range(s.queries):  # alternate, so noise on the machine hits both stores
        for key in _alternating(i):
            one(services[key], tenants[key], lat[key])
    for i in range(s.queries // 2):
        for key in _alternating(i):
            one(services[key], tenants[key], lat_subject[key], subject=True)
    for i in range(s.queries // 2):
        for key in _alternating(i):
            one(cold[key], tenants[key], lat[f"cold_{key}"])
    large_files = [ctx.root / search_store_name("large")]
    resident_before = page_cache.resident_share(large_files)
    for _ in range(s.queries):
        one(services["large"], ctx.tenants["large"], lat["large_all"])
    resident_after = page_cache.resident_share(large_files)
    long_queries = _query_lengths(ctx, rng)
    p = {k: percentiles(v) for k, v in lat.items()}
    r = ratio(p["large"]["p95_ms"], p["small"]["p95_ms"])
    r_cold = ratio(p["cold_large"]["p95_ms"], p["cold_small"]["p95_ms"])
    return {
        "page_cache_warmup_s": ctx.results.get("page_cache_warmup_s"),
        "page_cache_warmup_large_bytes": ctx.results.get("page_cache_warmup_large_bytes"),
        "scope_items": s.scope,
        "small_store_items": s.small_store,
        "large_store_items": s.large_store,
        "queries_per_store": len(lat["small"]),
        "tenants_compared": len(small_tenants),
        "vector_cache_entries": ctx.stores["large"].search.keyring.opened.capacity,
        "small": p["small"],
        "large": p["large"],
        "ratio": r,
        "ratio_p50": ratio(p["large"]["p50_ms"], p["small"]["p50_ms"]),
        "cold_queries": len(lat["cold_small"]),
        "cold_small": p["cold_small"],
        "cold_large": p["cold_large"],
        "cold_ratio": r_cold,
        "large_all": p["large_all"],
        "large_all_tenants": len(ctx.tenants["large"]),
        # The share of the large store's file pages the page cache held (``bench.page_cache``).
        "page_cache_resident": {
            "after_warmup": ctx.results.get("page_cache_resident_after_warmup"),
            "large_all_start": resident_before,
            "large_all_end": resident_after,
        },
        "ratio_all": ratio(p["large_all"]["p95_ms"], p["small"]["p95_ms"]),
        "target": TARGETS["search_latency"],
        "met": r <= 1.5
        and r_cold <= 1.5
        and max(p[k]["p95_ms"] for k in ("small", "large", "large_all")) <= 20,
        "mean_items_returned": round(statistics.mean(hits), 2) if hits else 0,
        "subject_scope_items": s.scope // s.subjects_per_scope,
        "subject_small": percentiles(lat_subject["small"]),
        "subject_large": percentiles(lat_subject["large"]),
        "recall": (ctx.stores["large"].search.vectors.model and "hybrid") or "lexical",
        "query_terms": long_queries,
    }


def _uncached(service: SearchService) -> SearchService:
    """The same store, keys and embedder, with no opened-vector cache: every search opens its
    scope's vectors from their ciphertext, as a scope the cache does not hold is served."""
    k = service.keyring
    keyring = SubjectKeyring(k.kms, k.uow, k.cache, OpenedVectors(max_vectors=0))
    return SearchService(
        service.uow, keyring, service.pseudonyms, vectors=service.vectors, blend=service.blend
    )


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
