"""The bench's summary table gives every target of the scale-out issue a verdict, from the
figures a run measured: a reader sees at a glance which targets a run met and which it missed."""

from __future__ import annotations

from typing import Any

from lethe.api.bench.summary import Row, summary_rows


def _results(scale: str = "full", **figures: dict[str, Any]) -> dict[str, Any]:
    return {"scale": scale, "figures": figures}


def _row(rows: list[Row], label: str) -> Row:
    (found,) = [r for r in rows if r[0].startswith(label)]
    return found


def _replay(events_per_s: float) -> dict[str, Any]:
    return {
        "events_per_s": events_per_s,
        "identical": True,
        "baseline_read_events_per_s": 115_418.0,
        "ratio": 0.17,
    }


def _search(any_scope_p95_ms: float) -> dict[str, Any]:
    p95 = {"p95_ms": 1.9}
    return {
        "tenants_compared": 10,
        "scope_items": 1000,
        "large_store_items": 1_000_000,
        "small_store_items": 10_000,
        "large": p95,
        "small": p95,
        "ratio": 1.0,
        "met": True,
        "cold_small": {"p95_ms": 16.2},
        "cold_large": {"p95_ms": 16.1},
        "cold_ratio": 0.99,
        "large_all_tenants": 1000,
        "large_all": {"p95_ms": any_scope_p95_ms},
        "ratio_all": any_scope_p95_ms / 1.9,
    }


def _forget(to_reported_ms: float, report_ms: float) -> dict[str, Any]:
    return {
        "subjects": {},
        "large_store": {
            "memories": 10,
            "store_items": 1_000_010,
            "headline_ms": 105.8,
            "compaction_ms": 898.7,
            "report_ms": report_ms,
            "wall_ms": to_reported_ms,
        },
    }


def _rss(bench_mib: float, loader_mib: float) -> dict[str, Any]:
    return {
        "start_mb": 105.8,
        "phases": {"5b replay check": bench_mib},
        "subprocesses": {"loader": loader_mib},
    }


def test_a_replay_check_under_twenty_thousand_events_a_second_misses_its_target() -> None:
    assert _row(summary_rows(_results(replay=_replay(19_836.0))), "5. Replay")[4:] == (
        ">= 20,000 events/s",
        "missed",
    )
    assert _row(summary_rows(_results(replay=_replay(20_000.0))), "5. Replay")[5] == "met"


def test_a_search_of_any_scope_meets_its_target_only_at_a_p95_of_twenty_ms_or_less() -> None:
    assert (
        _row(summary_rows(_results(search_latency=_search(17.27))), "3. Scoped search p95, any")[5] == "met"
    )
    assert (
        _row(summary_rows(_results(search_latency=_search(21.91))), "3. Scoped search p95, any")[5]
        == "missed"
    )


def test_each_search_row_has_the_verdict_of_its_own_figures_not_of_the_others() -> None:
    slow_cold_scopes = summary_rows(_results(search_latency={**_search(21.37), "met": False}))
    assert _row(slow_cold_scopes, "3. Scoped search p95, scope")[5] == "met"  # 1.00, 1.9 ms
    assert _row(slow_cold_scopes, "3. Scoped search p95, no vector cache")[5] == "met"
    assert _row(slow_cold_scopes, "3. Scoped search p95, any")[5] == "missed"
    grown = {**_search(17.27), "ratio": 1.6, "cold_ratio": 1.7}
    assert _row(summary_rows(_results(search_latency=grown)), "3. Scoped search p95, scope")[5] == "missed"
    assert (
        _row(summary_rows(_results(search_latency=grown)), "3. Scoped search p95, no vector")[5] == "missed"
    )


def test_a_64_term_query_meets_its_target_only_under_five_times_a_2_term_one_in_each_mode() -> None:
    def lengths(hybrid_64_ms: float) -> dict[str, Any]:
        def mode(p50_64: float) -> dict[str, Any]:
            return {"terms_2": {"p50_ms": 2.0}, "terms_64": {"p50_ms": p50_64}, "ratio_p50": p50_64 / 2.0}

        return {"queries": 200, "hybrid": mode(hybrid_64_ms), "lexical": mode(5.0)}

    rows = summary_rows(_results(search_latency={**_search(17.27), "query_terms": lengths(5.9)}))
    assert _row(rows, "3. Scoped search p50 by query length (hybrid)") == (
        "3. Scoped search p50 by query length (hybrid)",
        "5.9 ms, 64 terms",
        "2.0 ms, 2 terms",
        "2.95",
        "< 5x",
        "met",
    )
    assert _row(rows, "3. Scoped search p50 by query length (lexical)")[5] == "met"
    slow = summary_rows(_results(search_latency={**_search(17.27), "query_terms": lengths(13.8)}))
    assert _row(slow, "3. Scoped search p50 by query length (hybrid)")[5] == "missed"
    assert not [r for r in summary_rows(_results(search_latency=_search(17.27))) if "query length" in r[0]]


def test_a_large_store_forget_meets_its_target_in_five_seconds_to_reported_one_for_the_report() -> None:
    def forget(to_reported_ms: float, report_ms: float) -> Row:
        return _row(
            summary_rows(_results(forget_latency=_forget(to_reported_ms, report_ms))), "4. Forget 10 in"
        )

    met = forget(1057.7, 50.1)
    assert met[4:] == ("<= 5 s to reported, report <= 1 s", "met")
    assert "1,057.7 ms to reported" in met[1] and "report 50.1 ms after a restart" in met[1]
    assert forget(5200.0, 50.1)[5] == "missed"  # too slow to reported
    assert forget(1057.7, 1200.0)[5] == "missed"  # the report step alone too slow


def test_the_benchs_peak_memory_has_a_verdict_at_full_scale_only() -> None:
    full = summary_rows(_results(peak_rss=_rss(394.9, 191.8)))
    assert _row(full, "7. Peak RSS (bench")[4:] == ("<= 1 GiB at full scale", "met")
    assert _row(full, "7. Peak RSS (sub")[5] == "met"
    over = summary_rows(_results(peak_rss=_rss(1100.0, 1030.0)))
    assert _row(over, "7. Peak RSS (bench")[5] == "missed"
    assert _row(over, "7. Peak RSS (sub")[5] == "missed"
    small = summary_rows(_results("small", peak_rss=_rss(1100.0, 1030.0)))
    assert _row(small, "7. Peak RSS (bench")[5] == ""  # the target is for the full scale


def _writes(ratio: float, same_rows_ratio: float | None, driver_ratio: float | None = None) -> dict[str, Any]:
    w = {"ours_per_s": 650.0, "baseline_per_s": 650.0 / ratio, "ratio": ratio, "met": ratio >= 0.5}
    if same_rows_ratio is not None:
        w |= {"same_rows_per_s": 650.0 / same_rows_ratio, "same_rows_ratio": same_rows_ratio}
    if driver_ratio is not None:
        driver = 650.0 / driver_ratio
        w |= {"driver_rows_per_s": driver, "driver_rows_ratio": driver_ratio}
        w["driver_over_plain"] = round(driver / w["baseline_per_s"], 3)
    return w


def test_the_same_rows_baseline_has_its_own_row_with_a_ratio_and_no_target() -> None:
    rows = summary_rows(
        _results(write_throughput=_writes(0.21, 0.47), write_throughput_postgres=_writes(0.24, 0.9))
    )
    sqlite_target = _row(rows, "1. Governed encrypted writes (SQLite)")
    assert sqlite_target[3:] == ("0.21", ">= 0.5", "missed")
    same = _row(rows, "1. Governed encrypted writes, against the same rows written plainly (SQLite)")
    assert same[3:] == ("0.47", "", "")
    assert "same rows" in same[2]
    pg_same = _row(rows, "1b. Governed encrypted writes, against the same rows written plainly (PostgreSQL)")
    assert pg_same[3] == "0.90"


def test_results_without_the_same_rows_baseline_have_no_such_row() -> None:
    rows = summary_rows(_results(write_throughput=_writes(0.21, None)))
    assert not [r for r in rows if "same rows" in r[0]]


def test_the_driver_baseline_has_a_row_and_the_ceiling_it_sets_has_another_without_target() -> None:
    rows = summary_rows(_results(write_throughput=_writes(0.21, 0.47, 0.28)))
    driver = _row(rows, "1. Governed encrypted writes, against the same rows at the driver (SQLite)")
    assert driver[3:] == ("0.28", "", "")
    ceiling = _row(rows, "1. Governed encrypted writes: its ceiling")
    assert ceiling[3:] == ("0.75", "", "")  # 0.21 / 0.28: the driver's rate over the plain insert's
    assert "plain inserts" in ceiling[2] and "same rows" in ceiling[1]


def test_results_without_the_driver_baseline_have_no_such_rows() -> None:
    rows = summary_rows(_results(write_throughput=_writes(0.21, 0.47)))
    assert not [r for r in rows if "driver" in r[0]]
