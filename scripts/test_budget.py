"""Seconds per test directory from a pytest JUnit XML report: the budget table of
docs/architecture.md ("The test suite and its time budget").

    bash scripts/test.sh --junitxml=/tmp/suite.xml
    python3 scripts/test_budget.py /tmp/suite.xml

A test's seconds are its setup, call and teardown as pytest timed them; in a parallel run
they add up to more than the wall time (the workers overlap), which is the point of them.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET  # our own pytest's report, not untrusted input
from collections import defaultdict


def budget(path: str) -> dict[str, tuple[int, float]]:
    """Directory under tests/ -> (tests, seconds)."""
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for case in ET.parse(path).getroot().iter("testcase"):  # noqa: S314
        parts = case.get("classname", "").split(".")
        directory = parts[1] if len(parts) > 2 and parts[0] == "tests" else "(top level)"
        rows[directory][0] += 1
        rows[directory][1] += float(case.get("time") or 0)
    return {d: (int(n), s) for d, (n, s) in rows.items()}


def main(path: str) -> None:
    rows = sorted(budget(path).items(), key=lambda row: -row[1][1])
    print("| directory | tests | seconds |\n|---|---:|---:|")
    for directory, (tests, seconds) in rows:
        print(f"| tests/{directory} | {tests} | {seconds:.0f} |")
    tests, seconds = sum(t for _, (t, _) in rows), sum(s for _, (_, s) in rows)
    print(f"| total | {tests} | {seconds:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1])
