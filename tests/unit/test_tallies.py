"""The torture and fault suites' counts reach CI's log (``tests.tallies``), which runs ``-q``
and so drops what a passing test prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
from tests.tallies import report_at_end

def test_passes(pytestconfig):
    print("printed, then dropped")
    report_at_end(pytestconfig, "3 faults injected; 12 invariant checks passed")

def test_fails_part_way(pytestconfig):
    try:
        assert False, "an invariant broke"
    finally:
        report_at_end(pytestconfig, "1 fault injected; 0 invariant checks passed")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "parallel"])
def test_a_reported_line_is_printed_at_the_end_of_a_quiet_run_pass_or_fail(
    tmp_path: Path, workers: list[str]
) -> None:
    """Serial, or in pytest-xdist's workers (scripts/test.sh), whose own summaries nobody sees."""
    (tmp_path / "test_reports.py").write_text(TESTS)
    quiet_run = [sys.executable, "-m", "pytest", "-q", "-p", "tests.tallies", "-p", "no:cacheprovider"]
    run = subprocess.run(
        [*quiet_run, *workers, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout  # one test failed, on purpose
    summary = run.stdout[run.stdout.index("torture and fault injection") :]
    assert "3 faults injected; 12 invariant checks passed" in summary
    assert "1 fault injected; 0 invariant checks passed" in summary
    assert summary.count("invariant checks passed") == 2  # each line once
    assert "printed, then dropped" not in run.stdout  # what the passing test printed is not shown
