"""A pytest plugin: lines a test reports for the run's closing summary.

What a passing test prints is captured and dropped (CI runs ``-q``, not ``-s``), so the
torture and fault suites' counts (faults injected, invariant checks passed) would never
reach CI's log. ``report_at_end`` keeps a line for the terminal summary instead, which
shows it whether the test passed or failed.
"""

from __future__ import annotations

import pytest

_LINES = pytest.StashKey[list[str]]()


def report_at_end(config: pytest.Config, line: str) -> None:
    """Print ``line`` in the run's closing summary, under "torture and fault injection"."""
    config.stash.setdefault(_LINES, []).append(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(_LINES, [])
    if lines:
        terminalreporter.section("torture and fault injection")
        for line in lines:
            terminalreporter.write_line(line)
