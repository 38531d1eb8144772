"""The search sections of ``docs/performance.md``: lexical and hybrid search, the kept scopes,
query terms, and recall on the golden set.
"""

from __future__ import annotations

from typing import Any

from lethe.api.bench.report_text import DEFAULT_VECTOR_CACHE, lats, para, table
from lethe.api.bench.summary import fmt


def _warmup(sr: dict[str, Any]) -> str:
    """How fast the stores were read before the searches: from the page cache, or the disk."""
    seconds = sr.get("page_cache_warmup_s")
    size = sr.get("page_cache_warmup_large_bytes")
    if not seconds or not size:
        return "."
    rate = size / seconds / 1e6
    where = (
        "disk speed: the page cache did not keep the large store, so its figures here and the"
        " large-store forget's byte scan measure the disk"
        if rate < 1000
        else "page-cache speed"
    )
    read = f"reading them ({size / 1e9:.1f} GB the large one) took {fmt(seconds, 1)} s, {rate:,.0f} MB/s"
    return f"; {read}: {where}."


def search(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    sr = figs.get("search_latency", {})
    out = ["## 3. Scoped search latency"]
    if "small" not in sr:
        return out
    scope, subject = f"scope {sr['scope_items']:,}", f"one subject ({sr['subject_scope_items']})"
    small, large = f"store {sr['small_store_items']:,}", f"store {sr['large_store_items']:,}"
    n = sr.get("tenants_compared", sr["small_store_items"] // sr["scope_items"])
    rows = [
        [f"{scope}, {small}", *lats(sr["small"])],
        [f"{scope}, {large}, {n} of its scopes", *lats(sr["large"])],
        [f"{subject}, {small}", *lats(sr["subject_small"])],
        [f"{subject}, {large}, {n} of its scopes", *lats(sr["subject_large"])],
    ]
    if "cold_small" in sr:
        rows += [
            [f"{scope}, {small}, no vector cache", *lats(sr["cold_small"])],
            [f"{scope}, {large}, no vector cache", *lats(sr["cold_large"])],
            [f"{scope}, {large}, any of its {sr['large_all_tenants']:,} scopes", *lats(sr["large_all"])],
        ]
    alike = (
        [
            para(
                "What the store's size costs is measured with all else alike. The first rows query",
                f"{n} scopes of each store (all of the small one's, {n} spread over the large one's),",
                "so the opened-vector cache",
                f"({sr.get('vector_cache_entries', DEFAULT_VECTOR_CACHE):,} vectors) holds both sides'",
                "scopes. The",
                f"`no vector cache` rows ({sr.get('cold_queries', 0)} queries per store) open every",
                "vector from its ciphertext, as a scope the cache does not hold is served: its",
                "vectors are read with its rows and each is opened (AES-256-GCM). The last row is",
                "how a server meets the large store: queries spread over all its scopes, whose",
                "vectors do not fit the cache, so most of them are cold.",
            )
        ]
        if "cold_small" in sr
        else []
    )
    return [
        *out,
        para(
            f"`SearchService.search` in process, {sr['queries_per_store']} queries per store,",
            "alternating",
            "between the two stores. A scope is one tenant's agent and purpose holding",
            f"{sr['scope_items']:,} active items ({sp['subjects_per_scope']} subjects x",
            f"{sr['subject_scope_items']}); every tenant has one, so the",
            f"{sr['large_store_items']:,}-item",
            f"store holds {sr['large_store_items'] // sr['scope_items']:,} tenants and",
            f"{sr['large_store_items'] // sr['subject_scope_items']:,} subjects. Queries: two words,",
            "limit 10, budget 2,000 tokens, a random tenant each; the subject rows add a subject",
            "filter. Both stores come from the bulk import path (see Data generation); their files",
            "are then read once by a child process, so the page cache holds them as a running",
            "server's would (freshly written pages need not stay cached)" + _warmup(sr),
        ),
        *alike,
        table(["", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows),
        para(
            f"Ratio large/small of p95: {fmt(sr['ratio'], 3)} (of p50: {fmt(sr['ratio_p50'], 3)})"
            + (
                f"; without the vector cache {fmt(sr['cold_ratio'], 3)}; every scope of the large"
                f" store against the small store's {fmt(sr['ratio_all'], 3)} (a working set"
                f" {sr['large_all_tenants'] // n:,} times larger, not a larger index cost)."
                if "cold_small" in sr
                else "."
            ),
            "Target: ratio <= 1.5 and p95 <= 20 ms (every row above but the cold ones).",
            f"Mean items returned: {sr['mean_items_returned']}.",
            f"Recall of these searches: {sr.get('recall', 'lexical')}.",
        ),
        *_resident(sr.get("page_cache_resident")),
        *_query_terms(sr.get("query_terms")),
    ]


def _resident(share: dict[str, float | None] | None) -> list[str]:
    """What the page cache held of the large store: a cold scope's pages come from there or the disk."""
    moments = ("after_warmup", "large_all_start", "large_all_end")
    known = {k: v for k in moments if share and (v := share.get(k)) is not None}
    if len(known) < len(moments):
        return []
    pct = {k: f"{v * 100:.0f} %" for k, v in known.items()}
    return [
        para(
            "The page cache under these figures (the share of the large store's file pages it",
            f"held, from `mincore`): {pct['after_warmup']} after the stores were read, then",
            f"{pct['large_all_start']} when the queries over all its scopes began and",
            f"{pct['large_all_end']} when they ended. A cold scope's pages that the kernel dropped",
            "in between are read from the disk, so a lower share means slower cold searches with",
            "the same code.",
        )
    ]


def _query_terms(qt: dict[str, Any] | None) -> list[str]:
    if not qt:
        return []
    modes = [m for m in qt if m != "queries"]
    return [
        para(
            "Cost by query length, on the large store: two terms against 64 (all 22 words of the",
            "bench vocabulary, which every memory is written from, and 42 that no memory holds),",
            f"{qt['queries']} queries of each, interleaved; `lexical` is a search service without",
            "an embedder on the same store. A query of more than 64 distinct terms is refused (422).",
        ),
        table(
            ["", "2 terms p50 ms", "2 terms p95 ms", "64 terms p50 ms", "64 terms p95 ms", "ratio of p50"],
            [
                [
                    m,
                    fmt(qt[m]["terms_2"]["p50_ms"]),
                    fmt(qt[m]["terms_2"]["p95_ms"]),
                    fmt(qt[m]["terms_64"]["p50_ms"]),
                    fmt(qt[m]["terms_64"]["p95_ms"]),
                    fmt(qt[m]["ratio_p50"], 2) + "x",
                ]
                for m in modes
            ],
        ),
        para("Target: a 64-term query costs < 5x a 2-term one."),
    ]


def recall(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    g = figs.get("golden_recall", {})
    out = ["## Golden recall: lexical, semantic, hybrid"]
    if "recall" not in g:
        return [*out, para(g.get("skipped", "not measured"))] if g else out
    cats = [c for c in ("exact", "paraphrase", "negation", "distractor", "all") if c in g["recall"]["hybrid"]]
    rows = [
        [
            mode,
            *(f"{g['recall'][mode][c]['recall_at_5']:.3f} / {g['recall'][mode][c]['mrr']:.3f}" for c in cats),
        ]
        for mode in ("lexical", "semantic", "hybrid")
    ]
    w, s = g["write"], g["search"]
    return [
        *out,
        para(
            f"The checked-in golden set (`api/bench/golden/recall_v1.json`): {g['memories']} memories,",
            f"{g['queries']} queries, each expecting one memory; recall@5 / MRR (top 10) per",
            f"category, through `SearchService` on one SQLite store. Embedder: `{g['model']}`.",
        ),
        table(["", *(f"{c} ({g['recall']['hybrid'][c]['queries']})" for c in cats)], rows),
        para(
            f"Hybrid over lexical on paraphrases: {fmt(g['paraphrase_gain_points'], 1)} points",
            "(target: >= 25, and no worse on exact terms).",
            f"Embedding cost per write: {fmt(w['embedding_per_write_ms'], 3)} ms",
            f"({fmt(w['embedding_share_of_write'], 3)} of a governed write);",
            f"batched, per text: {fmt(w['batched_vs_single'], 3)} of one alone.",
            f"Search at this scale, hybrid/lexical median: {fmt(s['hybrid_vs_lexical'], 2)}.",
        ),
    ]
