"""The residue suite: after a forget reaches its certificate, nothing of the subject comes back
on any surface, and every probe first proved, before the forget, that it finds the subject.

One deployment per backend (SQLite, PostgreSQL): two real ``lethe serve`` processes on one
store (node A with two workers and hybrid recall, node B lexical), ``lethe mcp`` over stdio,
the LangGraph store, and a backup restored into a store of its own. The figures go into
``docs/erasure-semantics.md`` and are printed at the end of the run.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.residue import deployment as dep
from tests.residue import surfaces as s
from tests.residue.probes import Figures, Markers, Probe, Skipped, run_all, tally
from tests.residue.report import summary, write

pytestmark = pytest.mark.slow

MIN_PROBES = 100  # per backend: two backends make the 200
FIGURES: list[Figures] = []  # printed by this folder's conftest at the end of the run


def skipped_surfaces() -> list[Skipped]:
    """Surfaces named by the issue that this build of Lethe does not have (said, not hidden)."""
    out = [
        Skipped("traces", "Lethe emits no traces (no tracing is built)"),
        Skipped("stored exports", "exports are returned, not stored: Lethe keeps only their audit event"),
        Skipped("DRP identity mappings", "not built"),
    ]
    if importlib.util.find_spec("wordllama") is None:
        out.append(Skipped("hybrid recall", "the semantic extra is not installed: node A is lexical too"))
    return out


def run_phase(d: dep.Deployment, phase: str, mk: Markers, scraped: dict[str, float], pg: Any) -> dict:
    """Every probe of the phase. The counts read /metrics first in the control and last after
    (a worker keeps its KPI gauges 30 s); the logs are read once the reads they log are done.
    MCP's session and the restored backup run beside the HTTP probes, in threads of their own."""
    counts = [
        *s.count_probes(d, d.node_a, "node A", scraped),
        *s.count_probes(d, d.node_b, "node B", scraped),
    ]
    http = [*s.export_probes(d, d.node_a, mk), *s.langgraph_probes(d, mk)]
    for node, label in ((d.node_a, "node A"), (d.node_b, "node B")):
        http += s.http_probes(d, node, label, phase, mk)
    found = run_all(counts) if phase == "control" else {}
    with ThreadPoolExecutor(2) as pool:
        mcp = pool.submit(s.mcp_probes, d, d.root / f"mcp-{phase}.log", mk)
        restored = pool.submit(restored_probes, d, phase, mk, pg)
        found.update(run_all(http, threads=4))
        found.update(run_all([*mcp.result(), *restored.result()]))
    found.update(run_all(logs(d, phase)))
    if phase != "control":
        found.update(run_all(counts))
    return found


def restored_probes(d: dep.Deployment, phase: str, mk: Markers, pg: Any) -> list[Probe]:
    url = pg.create() if pg is not None else None
    if url:
        d.pg_urls.append(url)
    with dep.restored(d, phase, url) as client:
        return s.restored_probes(client, d, mk)


def logs(d: dep.Deployment, phase: str) -> list[Probe]:
    return [
        *s.access_log_probes(d, d.node_a, "node A", phase),
        *s.access_log_probes(d, d.node_b, "node B", phase),
    ]


def log_lines_with_markers(d: dep.Deployment, mk: Markers) -> list[str]:
    """Every line any process printed (both nodes, MCP's stderr) that holds a marker."""
    files = [d.node_a.out, d.node_a.err, d.node_b.out, d.node_b.err, *d.root.glob("mcp-*.log")]
    content = mk.content_only()  # ids may be logged (they remain by design; "What remains")
    return [line[:200] for f in files for line in Path(f).read_text().splitlines() if content.in_text(line)]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def residue(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    backend = request.param
    pg = request.getfixturevalue("postgres") if backend == "postgres" else None
    started = time.monotonic()

    def lap(what: str) -> None:
        print(f"residue [{backend}] {time.monotonic() - started:6.1f} s {what}", file=sys.stderr)

    url = pg.create() if pg is not None else None
    d = dep.start(backend, tmp_path_factory.mktemp(f"residue-{backend}"), url)
    try:
        lap("started")
        dep.seed(d)
        dep.back_up(d)
        lap("seeded, backed up")
        mk, scraped = s.markers(d), {}
        before = run_phase(d, "control", mk, scraped, pg)
        lap("control")
        hygiene_before = log_lines_with_markers(d, mk)
        dep.forget(d)
        lap("forgotten")
        after = run_phase(d, "after", mk, scraped, pg)
        lap("after")
        still = s.others_still_served(d)
        recall = {"node A": s.recall_of(d, d.node_a), "node B": s.recall_of(d, d.node_b)}
        figures = tally(backend, before, after, skipped_surfaces())
        figures.seconds = time.monotonic() - started
        yield figures, hygiene_before, log_lines_with_markers(d, mk), still, recall
    finally:
        d.stop()
        if pg is not None:
            for u in d.pg_urls:
                pg.drop(u)


def test_no_residue_of_a_forgotten_subject_on_any_surface(residue: Any) -> None:
    figures, hygiene_before, hygiene_after, still, recall = residue
    FIGURES.append(figures)
    write(figures)
    print("\n" + summary(figures))
    assert figures.misses == [], f"probes that found nothing before the forget: {figures.misses}"
    assert figures.probes >= MIN_PROBES
    assert figures.residues == [], figures.residues
    # The after run is not empty because the surfaces broke: the other subject is still served.
    assert all(still.values()), still
    # Both recalls were probed: node A ranks with sealed vectors (the semantic extra), node B lexically.
    semantic = importlib.util.find_spec("wordllama") is not None
    assert recall == {"node A": "hybrid" if semantic else "lexical", "node B": "lexical"}, recall
    # The logs never held the subject (before or after): content, ids, identifiers, provenance.
    assert hygiene_before == [] and hygiene_after == []
