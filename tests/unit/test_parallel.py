"""The suite runs in pytest-xdist workers (``scripts/test.sh``): tests that share a module- or
package-scoped fixture share a worker (``tests.parallel``), so such a fixture (a server, a
private PostgreSQL) is set up once per run, as in a serial run, not once per worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
import os
import pytest

@pytest.fixture(scope="module")
def server():
    with open(os.environ["SETUPS"], "a") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "serial") + "\\n")
    return "started"

@pytest.mark.parametrize("n", range(8))
def test_uses_the_module_server(server, n):
    assert server == "started"

@pytest.mark.parametrize("n", range(8))
def test_needs_nothing_shared(n):
    assert n >= 0
"""


def run(tmp_path: Path, *options: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    (tmp_path / "test_shared.py").write_text(TESTS)
    setups = tmp_path / "setups"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(tmp_path)]
    done = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SETUPS": str(setups)},
    )
    return done, setups.read_text().split()


def test_tests_of_a_module_scoped_fixture_share_one_worker_and_one_setup(tmp_path: Path) -> None:
    done, setups = run(tmp_path, "-p", "tests.parallel", "-n", "2", "--dist", "loadgroup")
    assert "16 passed" in done.stdout, done.stdout
    assert len(setups) == 1, setups
    assert setups[0].startswith("gw")  # it did run in a worker


def test_without_the_grouping_each_worker_would_set_the_fixture_up(tmp_path: Path) -> None:
    """The control: xdist alone spreads the module's tests, and each worker pays for the fixture."""
    done, setups = run(tmp_path, "-n", "2", "--dist", "loadgroup")
    assert "16 passed" in done.stdout, done.stdout
    assert sorted(setups) == ["gw0", "gw1"]
