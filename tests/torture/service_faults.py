"""What the service-fault tests share: the answers clients saw, and each test's tally line.

``Answers`` records every HTTP answer with the phase of the fault it was sent and answered
in (a request that straddles a change of phase is counted as ``transition``), so a test can
say what clients saw before, during and after an outage. ``Tally`` is one test's counts,
printed in the run's closing summary (``tests.tallies``) whether the test passed or failed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx
import pytest
import sqlalchemy as sa

from tests.tallies import report_at_end
from tests.torture.cluster import PrivatePostgres

HTTP_TIMEOUT = 30.0  # an answer slower than this is a hang
PROBLEM = "application/problem+json"


@dataclass
class Answers:
    """Every answer clients got, by phase; 5xx other than a 503 problem are server errors."""

    phase: str = "before"
    by_phase: dict[str, Counter[int]] = field(default_factory=dict)
    slowest: dict[str, float] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, http: httpx.Client, method: str, path: str, **kw: object) -> httpx.Response | None:
        """One request, recorded; None if it hung past ``HTTP_TIMEOUT``."""
        started, start = self.phase, time.monotonic()
        what = f"{method} {path.split('?')[0]}"
        try:
            r = http.request(method, path, timeout=HTTP_TIMEOUT, **kw)  # type: ignore[arg-type]
        except httpx.TimeoutException:
            with self.lock:
                self.hangs.append(what)
            return None
        seconds = time.monotonic() - start
        phase = started if self.phase == started else "transition"
        with self.lock:
            self.by_phase.setdefault(phase, Counter())[r.status_code] += 1
            self.slowest[phase] = max(self.slowest.get(phase, 0.0), seconds)
            if r.status_code >= 500 and r.status_code != 503:
                self.server_errors.append(f"{what} -> {r.status_code}")
            if r.status_code == 503 and not r.headers.get("content-type", "").startswith(PROBLEM):
                self.server_errors.append(f"{what} -> 503 that is not a problem document")
        return r

    def total(self) -> Counter[int]:
        with self.lock:
            return sum(self.by_phase.values(), Counter())


@dataclass
class Tally:
    """One fault test's counts, reported at the end of the run with its wall-clock seconds."""

    name: str
    faults: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    answers: Answers = field(default_factory=Answers)
    notes: list[str] = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)

    def check(self, holds: bool, claim: str, evidence: object = "") -> None:
        """Assert ``claim``, counting it as an invariant check passed."""
        assert holds, f"{claim}: {evidence}"
        self.checks[claim] += 1

    def line(self) -> str:
        phases = {p: dict(c) for p, c in self.answers.by_phase.items()}
        notes = "".join(f"; {n}" for n in self.notes)
        return (
            f"fault injection, {self.name}: {sum(self.faults.values())} faults injected "
            f"({dict(self.faults)}); {sum(self.checks.values())} invariant checks passed "
            f"({dict(self.checks)}); answers by phase {phases}{notes}; "
            f"{time.monotonic() - self.start:.1f} s"
        )


def tally_for(request: pytest.FixtureRequest, name: str) -> Tally:
    """A ``Tally`` whose line is reported when the test ends, passed or failed."""
    tally = Tally(name)
    request.addfinalizer(lambda: report_at_end(request.config, tally.line()))
    return tally


def private_database(pg: PrivatePostgres) -> str:
    """A fresh database on the private server, so the module's tests do not share a store."""
    name = f"lethe_f_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(pg.url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return str(sa.engine.make_url(pg.url).set(database=name).render_as_string(hide_password=False))
