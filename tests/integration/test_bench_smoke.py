"""``lethe bench --scale small`` runs to the end and reports every figure.

No timing is asserted anywhere: the benchmark reports ratios against same-machine
baselines, and a slow or busy machine must not fail the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.children import clean_env, lethe_command

pytestmark = pytest.mark.alone  # it measures the machine: run without the parallel workers beside it

FIGURES = (
    "write_throughput",
    "write_throughput_postgres",
    "vault_envelope",
    "search_latency",
    "forget_latency",
    "compaction",
    "replay",
    "http_search",
    "http_nodes",
    "peak_rss",
)


@pytest.mark.slow
def test_bench_small_completes_and_writes_json_and_markdown(tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "bench.json", tmp_path / "performance.md"
    env = clean_env()
    proc = subprocess.run(
        [
            *lethe_command(),
            "bench",
            "--scale",
            "small",
            "--json",
            str(out_json),
            "--output",
            str(out_md),
            "--workdir",
            str(tmp_path),
            "--soak-minutes",
            "0.25",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]

    results = json.loads(out_json.read_text())
    assert results["scale"] == "small"
    assert results["command"].startswith("lethe bench")
    assert results["errors"] == []
    for key in ("cpu_model", "cores", "ram_gib", "python", "sqlite"):
        assert results["machine"][key], key
    probes = results["machine"]["calibration"]
    assert probes["python_loop_ms"] > 0 and probes["thread_wake_round_trip"]["cpu_us"] > 0
    assert "Probe: one thread wakes another" in out_md.read_text()
    for key in FIGURES:
        assert key in results["figures"], key
        assert "error" not in results["figures"][key], results["figures"][key]
    figures = results["figures"]
    sp = results["scale_parameters"]
    assert figures["write_throughput"]["ratio"] > 0
    pg_writes = figures["write_throughput_postgres"]  # this machine kind has PostgreSQL: it runs
    assert pg_writes["writes"] == sp["writes"] and pg_writes["ratio"] > 0
    for key, unit in (("write_throughput", "wal_pages"), ("write_throughput_postgres", "wal_bytes")):
        w = figures[key]  # a governed write logs more than the plain insert of its row
        assert w["log_unit"] == unit and w[f"{unit}_per_write"] > w[f"{unit}_per_plain_insert"] > 0
        # the same rows written plainly log about what the write does, several times one row
        assert w[f"{unit}_per_same_rows"] > 2 * w[f"{unit}_per_plain_insert"]
        assert w["same_rows_per_s"] > 0 and w["same_rows_ratio"] > w["ratio"]
        assert w["driver_rows_per_s"] > 0 and w["driver_rows_latency"]["p50_ms"] > 0
        ceiling = w["driver_rows_per_s"] / w["baseline_per_s"]  # the highest ratio these rows allow
        assert w["driver_over_plain"] == pytest.approx(ceiling, abs=0.002)
    vault = figures["vault_envelope"]
    assert vault.get("skipped") == "no OpenBao" or vault["ratio"] > 0
    search = figures["search_latency"]
    assert {"small", "large", "ratio", "cold_ratio", "large_all"} <= search.keys()
    assert search["tenants_compared"] == sp["small_store"] // sp["scope"]  # as many scopes a store
    for r in figures["forget_latency"]["subjects"].values():
        assert r["completed"]
        assert {"tombstoned", "key_destroyed", "verified", "compacted"} <= r["steps_ms"].keys()
    assert figures["compaction"]["events_rewritten"] > 0
    assert figures["replay"]["identical"]
    assert figures["http_search"]["search"]["requests"] > 0
    soak = figures["http_search"]["soak"]  # a quarter of a minute: one sample, and not "met"
    assert soak["requests"] > 0 and soak["errors"] == 0
    assert len(soak["samples"]) == 1 and soak["rss_mb"] > 50 and soak["met"] is False
    before, after = soak["scope_memories"]  # its writes grew the scopes it searched
    assert soak["scopes_searched"] >= 1 and after > before > 0
    assert figures["http_search"]["write"]["requests"] > 0 and figures["http_search"]["write"]["errors"] == 0
    nodes = figures["http_nodes"]  # this machine kind has PostgreSQL, OpenBao and wrk: it runs
    assert nodes["search"]["requests"] > 0 and len(nodes["search"]["per_node"]) == 2
    assert nodes["write"]["requests"] > 0 and nodes["write"]["errors"] == 0
    assert nodes["searches_at_once"] == 2  # a PostgreSQL node's default, which the document states
    cpu = nodes["search"]["cpu_us_per_request"]  # each node's, and the local server's over both
    assert len(cpu["nodes"]) == 2 and all(us is not None and us > 0 for us in cpu["nodes"])
    assert cpu["postgres"] is not None and cpu["postgres"] > 0
    assert figures["http_search"]["search"]["cpu_us_per_request"]["server"] > 0
    assert figures["peak_rss"]["phases"]
    assert results["data_generation"]

    md = out_md.read_text()
    headings = ("# Performance", "## Machine", "## Summary", "## 1.", "### 1b.", "## 3.", "## 6.", "## 7.")
    for heading in headings:
        assert heading in md, heading
    assert results["command"] in md
    assert "1 worker each, running 2 searches at once" in " ".join(md.split())
    assert "| server CPU µs/req |" in md and "| node CPU µs/req | PostgreSQL CPU µs/req |" in md
    assert " ".join(md.split()).count("The log a commit waits for: a Lethe write appends") == 2
    assert " ".join(md.split()).count("Same rows, plainly: every row the timed writes added") == 2
    assert f"they held {before:,} memories at the start and {after:,} at the end" in " ".join(md.split())
    large = search["page_cache_warmup_large_bytes"]  # the large store as it was read, before the searches
    if sys.platform == "linux":  # the share of its pages the page cache held, at three moments
        shares = search["page_cache_resident"]
        assert all(0.0 <= shares[k] <= 1.0 for k in ("after_warmup", "large_all_start", "large_all_end"))
        assert shares["after_warmup"] > 0.5  # just read, whole
        assert "when the queries over all its scopes began" in " ".join(md.split())
    assert large > 0 and f"({large / 1e9:.1f} GB the large one)" in " ".join(md.split())
    # The benchmark cleans up after itself: only the two reports are left.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json", "performance.md"]
