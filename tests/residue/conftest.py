"""Prints the residue suite's figures in pytest's terminal summary (without ``-s`` too)."""

from __future__ import annotations

from typing import Any

from tests.residue.report import summary


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.residue.test_residue_suite import FIGURES

    if FIGURES:
        terminalreporter.section("residue suite")
        for figures in FIGURES:
            terminalreporter.write_line(summary(figures))
