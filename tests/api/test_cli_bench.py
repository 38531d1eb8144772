"""``lethe bench`` writes a report only where asked: ``--output`` for the Markdown, ``--json``.

A ``FakeBench`` stands in for the run (the real one takes minutes; the slow smoke test
``tests/integration/test_bench_smoke.py`` runs it), so this checks only the command's files.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import lethe.api.bench.runner
from lethe.api.bench.scales import FIGURES, SCALES
from lethe.api.cli.main import app


class FakeBench:
    """Returns the results of a run in which every figure was skipped."""

    def __init__(self, scale: Any, **_: Any) -> None:
        self.scale = scale

    def run(self) -> dict[str, Any]:
        return {
            "command": "lethe bench",
            "date": "2025-01-01T00:00:00+00:00",
            "scale": self.scale.name,
            "scale_parameters": asdict(self.scale),
            "kms": "local",
            "machine": {},
            "figures": {key: {"skipped": "fake"} for key in FIGURES},
            "phases": {},
            "data_generation": {},
            "total_seconds": 0.0,
            "errors": [],
        }


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(lethe.api.bench.runner, "Bench", FakeBench)
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(app, ["bench", *args])

    return invoke


def test_without_output_no_markdown_is_written(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = bench()
    assert r.exit_code == 0, r.output
    assert "wrote" not in r.output
    assert list(tmp_path.iterdir()) == []  # docs/performance.md above all


def test_output_and_json_write_where_asked(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    md, js = tmp_path / "out" / "perf.md", tmp_path / "out" / "bench.json"
    r = bench("--scale", "small", "--output", str(md), "--json", str(js))
    assert r.exit_code == 0, r.output
    assert md.read_text().startswith("# Performance")
    assert json.loads(js.read_text())["scale_parameters"] == json.loads(json.dumps(asdict(SCALES["small"])))
    assert sorted(p.name for p in md.parent.iterdir()) == ["bench.json", "perf.md"]
