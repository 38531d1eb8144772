"""Fault: console sessions expiring, idle and absolute, over HTTP on a private PostgreSQL.

docs/console.md ("Signing in"): a session ends after ``LETHE_CONSOLE_SESSION_IDLE_SECONDS``
without a request, and ``LETHE_CONSOLE_SESSION_MAX_SECONDS`` after sign-in however busy;
the browser is then sent to the sign-in page and the session's row is gone. The app runs
in process with short limits (20 s idle, 120 s absolute) and the sessions' clock injected,
so the test moves time instead of sleeping. Three people sign in:

- ``idle`` makes one request, then none: past the idle limit it is sent to sign in;
- ``busy`` makes a request every 8 s: never idle, it is still sent to sign in at 120 s;
- ``control`` signs in later and stays within both limits: every request is served.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from lethe.api.bootstrap import build
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.clock import utcnow
from lethe.vault.model import Role
from lethe.vault.store.tables import console_sessions
from tests.api.test_console import sign_in
from tests.torture.cluster import PrivatePostgres
from tests.torture.service_faults import Tally, private_database, tally_for

pytestmark = pytest.mark.slow

IDLE, MAX_AGE, EVERY = 20, 120, 8  # seconds: the idle and absolute limits, the busy pace
SIGN_IN = "/console/sign-in"


class Clock:
    """The sessions' clock, moved by the test."""

    def __init__(self) -> None:
        self.start = self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now

    def at(self, seconds: float) -> None:
        self.now = self.start + timedelta(seconds=seconds)


@pytest.fixture
def console(private_postgres: PrivatePostgres, tmp_path: Path) -> Iterator[tuple[TestClient, Clock]]:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=private_database(private_postgres),
        console_session_idle_seconds=IDLE,
        console_session_max_seconds=MAX_AGE,
        sweep_interval_seconds=3600.0,
    )
    build(settings, create=True).close()  # `lethe init`
    app = create_app(settings)
    clock = Clock()
    with TestClient(app) as client:
        app.state.container.sessions.clock = clock
        yield client, clock


def served(client: TestClient, t: Tally, who: str) -> bool:
    """One page request: True if served, False if sent to sign in (anything else fails)."""
    r = client.get("/console/", follow_redirects=False)
    t.answers.by_phase.setdefault(who, Counter())[r.status_code] += 1
    assert r.status_code == 303, r.text
    if r.headers["location"] == SIGN_IN:
        assert "lethe_console" not in client.cookies, "the dead session's cookie is not cleared"
        return False
    page = client.get(r.headers["location"])
    t.answers.by_phase[who][page.status_code] += 1
    assert page.status_code == 200, page.text
    return True


def rows(client: TestClient) -> int:
    container = client.app.state.container  # type: ignore[attr-defined]
    with container.uow.maintenance("test: inspect every tenant's rows"), container.uow.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(console_sessions)).scalar_one())


def test_idle_and_absolute_console_session_expiry_send_to_sign_in(
    console: tuple[TestClient, Clock], request: pytest.FixtureRequest
) -> None:
    app_client, clock = console
    t = tally_for(request, "console sessions expiring")
    tokens = app_client.app.state.tokens  # type: ignore[attr-defined]
    people = {who: TestClient(app_client.app) for who in ("idle", "busy", "control")}
    for who, client in people.items():
        if who != "control":
            r = sign_in(client, tokens.create(Role.AUDITOR, "t1", display_name=who)[0])
            assert r.status_code == 303
            t.check(
                f"Max-Age={MAX_AGE}" in r.headers["set-cookie"], "the cookie lives as long as the session"
            )
    dead_id = people["idle"].cookies["lethe_console"]
    clock.at(EVERY)
    t.check(served(people["idle"], t, "idle"), "a fresh session is served")
    control_from = MAX_AGE - 3 * EVERY  # the control signs in late: within both limits at the end
    idle_checked = False
    for second in range(EVERY, MAX_AGE, EVERY):
        clock.at(second)
        t.check(
            served(people["busy"], t, "busy"), "a busy session within its absolute limit is served", second
        )
        if second >= EVERY + IDLE and not idle_checked:
            idle_checked, before = True, rows(app_client)
            t.faults["a session left idle past its limit"] += 1
            t.check(not served(people["idle"], t, "idle"), "an idle session is sent to sign in", second)
            t.check(rows(app_client) == before - 1, "the idle session's row is gone")
        if second > control_from:
            t.check(served(people["control"], t, "control"), "the control session is served", second)
        elif second + EVERY > control_from:
            r = sign_in(people["control"], tokens.create(Role.AUDITOR, "t1", display_name="control")[0])
            assert r.status_code == 303

    clock.at(MAX_AGE)  # the busy session's last request was 8 s ago: not idle, but too old
    t.faults["a busy session reaching its absolute limit"] += 1
    t.check(not served(people["busy"], t, "busy"), "a busy session is sent to sign in at its absolute limit")
    t.check(served(people["control"], t, "control"), "the control session is still served after both")
    t.check(rows(app_client) == 1, "only the control session's row is left", rows(app_client))
    people["idle"].cookies.set("lethe_console", dead_id, domain="testserver.local", path="/console")
    t.check(not served(people["idle"], t, "idle"), "an expired session's id, sent again, is refused")
