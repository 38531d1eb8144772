"""The summary table, one row per figure: printed by ``lethe bench`` and opening the report.

Also the number formatting both share (``fmt``), so the terminal and the Markdown agree.
"""

from __future__ import annotations

import math
from typing import Any

from lethe.api.bench.stats import ratio

Row = tuple[str, str, str, str, str, str]  # figure, Lethe, baseline, ratio, target, verdict


def fmt(x: Any, digits: int = 1) -> str:
    """A number with thousands separators; ``n/a`` for None and NaN; anything else as text."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, int | float):
        return f"{x:,.{digits}f}"
    return str(x)


def verdict(fig: dict[str, Any]) -> str:
    """``met``, ``missed``, ``error``, the reason it was skipped, or nothing (no target)."""
    if "error" in fig:
        return "error"
    if "skipped" in fig:
        reason: str = fig["skipped"]
        return reason
    met = fig.get("met")
    return "met" if met else ("missed" if met is False else "")


def summary_rows(results: dict[str, Any]) -> list[Row]:
    """(figure, ours, baseline, ratio, target, verdict) for the table printed and written."""
    figs = results["figures"]
    rows: list[Row] = []
    for label, key, figure_rows in _FIGURES:
        if key not in figs:  # results of a run before the figure existed
            continue
        fig = figs[key]
        if "error" in fig or "skipped" in fig:
            rows.append(row(label, "", target=fig.get("target", ""), verdict=verdict(fig)))
        else:
            rows += figure_rows(fig)
    rows += _rss_rows(figs.get("peak_rss", {}), full=results.get("scale") == "full")
    soak = figs.get("http_search", {}).get("soak")
    if soak and soak.get("samples"):
        rows.append(
            row(
                f"7. lethe serve RSS after {fmt(soak['seconds'] / 60, 1)} min of HTTP load",
                f"{fmt(soak['rss_mb'])} MiB (largest process; peak {fmt(soak['peak_rss_mb'])})",
                f"{fmt(soak['samples'][0]['rss_mb'])} MiB after 1 min",
                target="<= 250 MB after 10 min",
                verdict=verdict(soak),
            )
        )
    return rows


def row(
    figure: str, ours: str, baseline: str = "", ratio: str = "", target: str = "", verdict: str = ""
) -> Row:
    """One summary row; a figure without a target leaves the last two cells empty."""
    return (figure, ours, baseline, ratio, target, verdict)


def _writes(
    w: dict[str, Any], label: str = "1. Governed encrypted writes", engine: str = "SQLite"
) -> list[Row]:
    rows = [
        row(
            f"{label} ({engine})",
            f"{fmt(w['ours_per_s'])} writes/s",
            f"{fmt(w['baseline_per_s'])} plain inserts/s",
            fmt(w["ratio"], 2),
            ">= 0.5",
            verdict(w),
        )
    ]
    if "same_rows_per_s" in w:  # absent from results of a run before the second baseline existed
        rows.append(
            row(
                f"{label}, against the same rows written plainly ({engine})",
                f"{fmt(w['ours_per_s'])} writes/s",
                f"{fmt(w['same_rows_per_s'])} writes of the same rows/s",
                fmt(w["same_rows_ratio"], 2),
            )
        )
    if "driver_rows_per_s" in w:  # absent from results of a run before the third baseline existed
        rows.append(
            row(
                f"{label}, against the same rows at the driver ({engine})",
                f"{fmt(w['ours_per_s'])} writes/s",
                f"{fmt(w['driver_rows_per_s'])} writes of the same rows/s",
                fmt(w["driver_rows_ratio"], 2),
            )
        )
        rows.append(
            row(
                f"{label}: its ceiling, the same rows at the driver against the plain insert ({engine})",
                f"{fmt(w['driver_rows_per_s'])} writes of the same rows/s",
                f"{fmt(w['baseline_per_s'])} plain inserts/s",
                fmt(w["driver_over_plain"], 2),
            )
        )
    return rows


def _writes_postgres(w: dict[str, Any]) -> list[Row]:
    return _writes(w, "1b. Governed encrypted writes", "PostgreSQL")


def _envelope(v: dict[str, Any]) -> list[Row]:
    return [
        row(
            "2. Per-record encryption on OpenBao",
            f"{fmt(v['envelope_per_s'], 0)}/s cached data key",
            f"{fmt(v['transit_per_record_per_s'], 0)}/s Transit encrypt",
            f"{fmt(v['ratio'])}x",
            ">= 20x",
            verdict(v),
        ),
        row(
            "2b. Durable writes on OpenBao",
            f"{fmt(v['ours_writes_per_s'])} writes/s",
            f"{fmt(v['naive_writes_per_s'])} writes/s, Transit per record",
            f"{fmt(v['writes_ratio'], 2)}x",
        ),
    ]


def _search(sr: dict[str, Any]) -> list[Row]:
    n = sr.get("tenants_compared", 0)
    rows = [
        row(
            f"3. Scoped search p95, scope {sr['scope_items']:,}" + (f", {n} scopes a store" if n else ""),
            f"{fmt(sr['large']['p95_ms'], 2)} ms in {sr['large_store_items']:,} items",
            f"{fmt(sr['small']['p95_ms'], 2)} ms in {sr['small_store_items']:,} items",
            fmt(sr["ratio"], 2),
            "<= 1.5, p95 <= 20 ms",
            # This row's own figures: the cold rows below have their own verdicts.
            _met(sr["ratio"] <= 1.5 and max(sr["large"]["p95_ms"], sr["small"]["p95_ms"]) <= 20),
        )
    ]
    if "cold_small" in sr:
        rows += [
            row(
                "3. Scoped search p95, no vector cache",
                f"{fmt(sr['cold_large']['p95_ms'], 2)} ms in {sr['large_store_items']:,} items",
                f"{fmt(sr['cold_small']['p95_ms'], 2)} ms in {sr['small_store_items']:,} items",
                fmt(sr["cold_ratio"], 2),
                "<= 1.5",
                _met(sr["cold_ratio"] <= 1.5),
            ),
            row(
                f"3. Scoped search p95, any of {sr['large_all_tenants']:,} scopes",
                f"{fmt(sr['large_all']['p95_ms'], 2)} ms in {sr['large_store_items']:,} items",
                f"{fmt(sr['small']['p95_ms'], 2)} ms in {sr['small_store_items']:,} items",
                fmt(sr["ratio_all"], 2),
                "p95 <= 20 ms",
                _met(sr["large_all"]["p95_ms"] <= 20),
            ),
        ]
    return rows + _query_terms(sr.get("query_terms"))


def _query_terms(qt: dict[str, Any] | None) -> list[Row]:
    """The retrieval issue's length target, one row a search mode: a 64-term query < 5x a 2-term one."""
    if not qt:
        return []
    return [
        row(
            f"3. Scoped search p50 by query length ({mode})",
            f"{fmt(qt[mode]['terms_64']['p50_ms'])} ms, 64 terms",
            f"{fmt(qt[mode]['terms_2']['p50_ms'])} ms, 2 terms",
            fmt(qt[mode]["ratio_p50"], 2),
            "< 5x",
            _met(qt[mode]["ratio_p50"] < 5),
        )
        for mode in qt
        if mode != "queries"
    ]


def _forget(fg: dict[str, Any]) -> list[Row]:
    rows = [
        row(
            f"4. Forget {int(n):,} memories (to verified)",
            f"{fmt(r['headline_ms'])} ms (+ compaction {fmt(r['compaction_ms'])} ms)",
            f"{fmt(r['baseline_delete_ms'])} ms plain DELETE",
            fmt(r["ratio"]),
        )
        for n, r in fg["subjects"].items()
    ]
    lg = fg.get("large_store")
    if lg:
        rows.append(
            row(
                f"4. Forget {lg['memories']:,} in {lg['store_items']:,}-item store",
                f"{fmt(lg['headline_ms'])} ms (+ compaction {fmt(lg['compaction_ms'])} ms, report "
                f"{fmt(lg['report_ms'])} ms after a restart): {fmt(lg['wall_ms'])} ms to reported",
                target="<= 5 s to reported, report <= 1 s",
                verdict=_met(lg["wall_ms"] <= 5000 and lg["report_ms"] <= 1000),
            )
        )
    return rows


def _compaction(cp: dict[str, Any]) -> list[Row]:
    return [
        row(
            "5. Compaction (rewrite)",
            f"{fmt(cp['rewrite_events_per_s'], 0)} events/s ({fmt(cp['end_to_end_events_per_s'], 0)} with "
            "VACUUM)",
            f"{fmt(cp['baseline_update_rows_per_s'], 0)} rows/s plain UPDATE",
            fmt(cp["ratio"], 2),
        )
    ]


def _replay(rp: dict[str, Any]) -> list[Row]:
    return [
        row(
            "5. Replay check",
            f"{fmt(rp['events_per_s'], 0)} events/s ({'identical' if rp['identical'] else 'DIFFERS'})",
            f"{fmt(rp['baseline_read_events_per_s'], 0)} events/s plain read",
            fmt(rp["ratio"], 3),
            ">= 20,000 events/s",
            _met(rp["events_per_s"] >= 20_000),
        )
    ]


def _http(h: dict[str, Any]) -> list[Row]:
    rows = [
        row(
            f"6. HTTP search, concurrency {h['concurrency']}, {h.get('workers', 1)} workers",
            f"{fmt(h['requests_per_s'])} req/s, p99 {fmt(h['p99_ms'])} ms",
            f"{fmt(h['auth_only']['requests_per_s'])} req/s auth only, p99 "
            f"{fmt(h['auth_only']['latency']['p99_ms'])} ms",
            fmt(h["ratio"], 2),
            ">= 500 req/s, p99 <= 100 ms",
            verdict(h),
        )
    ]
    if h.get("write"):
        w = h["write"]
        rows.append(
            row(
                f"6c. HTTP governed writes, concurrency {h['concurrency']}, {h.get('workers', 1)} workers",
                f"{fmt(w['requests_per_s'])} req/s, p99 {fmt(w['latency']['p99_ms'])} ms",
                "",
                "",
                ">= 300 req/s, p99 <= 150 ms",
                _met(bool(h.get("write_met"))),
            )
        )
    if h.get("previous") and "error" in h["previous"]:
        rows.append(row("6b. HTTP search against the previous release", "", target=">= 4x", verdict="error"))
    elif h.get("previous"):
        ratio_previous = h["ratio_previous"]
        rows.append(
            row(
                "6b. HTTP search against the previous release",
                f"{fmt(h['requests_per_s'])} req/s",
                f"{fmt(h['previous']['requests_per_s'])} req/s, previous release",
                fmt(ratio_previous, 2) + "x",
                ">= 4x",
                _met(ratio_previous >= 4),
            )
        )
    return rows


def _http_nodes(n: dict[str, Any]) -> list[Row]:
    label = f"{n['nodes']} nodes on PostgreSQL, concurrency {n['concurrency']}"
    return [
        row(
            f"6d. HTTP search, {label}",
            f"{fmt(n['search']['requests_per_s'])} req/s, p99 {fmt(n['search']['latency']['p99_ms'])} ms",
            f"{fmt(n['auth_only']['requests_per_s'])} req/s auth only",
            fmt(n["ratio"], 2),
            ">= 500 req/s, p99 <= 100 ms",
            verdict(n),
        ),
        row(
            f"6d. HTTP governed writes, {label}",
            f"{fmt(n['write']['requests_per_s'])} req/s, p99 {fmt(n['write']['latency']['p99_ms'])} ms",
            "",
            "",
            ">= 300 req/s, p99 <= 150 ms",
            _met(bool(n.get("write_met"))),
        ),
    ]


def _rss_rows(m: dict[str, Any], full: bool) -> list[Row]:
    """The bench's peak RSS: its target (1 GiB) is for the full scale, so a smaller run has no verdict."""
    if not m.get("phases"):
        return []
    target = "<= 1 GiB at full scale"
    name, peak = max(m["phases"].items(), key=lambda kv: kv[1] or 0)
    rows = [
        row(
            "7. Peak RSS (bench process)",
            f"{fmt(peak)} MiB ({name})",
            f"{fmt(m['start_mb'])} MiB at start",
            fmt(ratio(peak or 0, m["start_mb"] or 0), 1),
            target,
            _met(peak is not None and peak <= 1024) if full else "",
        )
    ]
    sub = m.get("subprocesses") or {}
    if sub:
        k, val = max(sub.items(), key=lambda kv: kv[1] or 0)
        rows.append(
            row(
                "7. Peak RSS (subprocesses)",
                f"{fmt(val)} MiB ({k})",
                target=target,
                verdict=_met(val is not None and val <= 1024) if full else "",
            )
        )
    return rows


def _met(ok: bool) -> str:
    """The verdict of a target a row checks itself."""
    return "met" if ok else "missed"


# (label of the row when the figure failed or was skipped, figure key, its rows), in report order.
_FIGURES = (
    ("1. Governed encrypted writes (SQLite)", "write_throughput", _writes),
    ("1b. Governed encrypted writes (PostgreSQL)", "write_throughput_postgres", _writes_postgres),
    ("2. Per-record encryption on OpenBao", "vault_envelope", _envelope),
    ("3. Scoped search p95, scope 1,000", "search_latency", _search),
    ("4. Forget", "forget_latency", _forget),
    ("5. Compaction", "compaction", _compaction),
    ("5. Replay check", "replay", _replay),
    ("6. HTTP search, concurrency 16", "http_search", _http),
    ("6d. HTTP, 2 nodes on PostgreSQL", "http_nodes", _http_nodes),
)
