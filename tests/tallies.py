"""A pytest plugin: lines a test reports for the run's closing summary.

What a passing test prints is captured and dropped (CI runs ``-q``, not ``-s``), so the
torture and fault suites' counts (faults injected, invariant checks passed) would never
reach CI's log. ``report_at_end`` keeps a line for the terminal summary instead, which
shows it whether the test passed or failed.

Under pytest-xdist the test runs in a worker, whose summary nobody sees: a line therefore
travels on the test's own report (its ``user_properties``, which xdist sends to the
controller), and the summary is built from the reports the printing process receives.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

_PENDING = pytest.StashKey[list[str]]()  # reported by a test, not yet on one of its reports
_LINES = pytest.StashKey[list[str]]()  # received on reports: the summary's lines
_PROPERTY = "tests.tallies"


def report_at_end(config: pytest.Config, line: str) -> None:
    """Print ``line`` in the run's closing summary, under "torture and fault injection"."""
    config.stash.setdefault(_PENDING, []).append(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    outcome = yield
    pending = item.config.stash.get(_PENDING, [])
    if pending:
        report = outcome.get_result()
        report.user_properties.extend((_PROPERTY, line) for line in pending)
        pending.clear()


class _Summary:
    """Collects the lines on the reports this process logs (its own, or its workers')."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        lines = [value for name, value in report.user_properties if name == _PROPERTY]
        self.config.stash.setdefault(_LINES, []).extend(lines)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Summary(config), "tests.tallies.summary")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(_LINES, [])
    if lines:
        terminalreporter.section("torture and fault injection")
        for line in lines:
            terminalreporter.write_line(line)
