"""Console sessions live in the database: hashed ids, idle and absolute expiry, sign-out.

Real SQLite and PostgreSQL (the ``lethe`` fixture); the clock is the only thing moved.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import Container
from lethe.vault.access.sessions import ConsoleSessions, csrf_token
from lethe.vault.errors import Unauthenticated
from lethe.vault.model import Role
from lethe.vault.store.tables import console_sessions


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sessions(lethe: Container, clock: Clock) -> ConsoleSessions:
    return ConsoleSessions(lethe.uow, idle=timedelta(minutes=30), max_age=timedelta(hours=8), clock=clock)


def officer_caller(lethe: Container):  # type: ignore[no-untyped-def]
    token, _ = lethe.tokens.create(Role.PRIVACY_OFFICER, "t1", display_name="Dana")
    return lethe.tokens.authenticate(token)


def test_the_database_holds_only_a_hash_of_the_session_id(
    lethe: Container, sessions: ConsoleSessions
) -> None:
    session_id = sessions.open(officer_caller(lethe))
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        rows = conn.execute(sa.select(console_sessions)).all()
    assert len(rows) == 1
    stored = " ".join(str(v) for v in rows[0])
    assert session_id not in stored and csrf_token(session_id) not in stored


def test_a_session_opened_through_one_node_is_resumed_through_another(
    lethe: Container, sessions: ConsoleSessions, clock: Clock
) -> None:
    caller = officer_caller(lethe)
    session_id = sessions.open(caller)
    other_node = ConsoleSessions(lethe.uow, idle=sessions.idle, max_age=sessions.max_age, clock=clock)
    assert other_node.resume(session_id).token_id == caller.principal


def test_a_session_idle_too_long_is_refused_and_removed(
    lethe: Container, sessions: ConsoleSessions, clock: Clock
) -> None:
    session_id = sessions.open(officer_caller(lethe))
    clock.now += timedelta(minutes=29)
    sessions.resume(session_id)  # activity restarts the idle clock
    clock.now += timedelta(minutes=29)
    sessions.resume(session_id)
    clock.now += timedelta(minutes=30)
    with pytest.raises(Unauthenticated):
        sessions.resume(session_id)
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(console_sessions)).scalar_one() == 0


def test_a_busy_session_still_ends_at_its_absolute_expiry(
    lethe: Container, sessions: ConsoleSessions, clock: Clock
) -> None:
    session_id = sessions.open(officer_caller(lethe))
    start = clock.now
    while clock.now + timedelta(minutes=20) < start + sessions.max_age:
        clock.now += timedelta(minutes=20)
        sessions.resume(session_id)
    clock.now = start + sessions.max_age  # the last request was under 20 minutes ago: not idle
    with pytest.raises(Unauthenticated):
        sessions.resume(session_id)


def test_sign_out_and_unknown_or_malformed_ids_are_refused(
    lethe: Container, sessions: ConsoleSessions
) -> None:
    session_id = sessions.open(officer_caller(lethe))
    sessions.close(session_id)
    for bad in (session_id, None, "", "x" * 43, "not a session id"):
        with pytest.raises(Unauthenticated):
            sessions.resume(bad)


def test_a_revoked_token_no_longer_stands_behind_its_session(
    lethe: Container, sessions: ConsoleSessions
) -> None:
    caller = officer_caller(lethe)
    session = sessions.resume(sessions.open(caller))
    assert lethe.tokens.caller_by_id(session.token_id) == caller
    lethe.tokens.revoke(caller.principal)
    with pytest.raises(Unauthenticated):
        lethe.tokens.caller_by_id(session.token_id)
    assert sessions.close_for_token(caller.principal) == 1


def test_signing_in_purges_expired_sessions(
    lethe: Container, sessions: ConsoleSessions, clock: Clock
) -> None:
    caller = officer_caller(lethe)
    for _ in range(3):
        sessions.open(caller)
    clock.now += timedelta(hours=9)
    sessions.open(caller)
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(console_sessions)).scalar_one() == 1


def test_a_session_in_use_outlives_an_idle_limit_shorter_than_the_touch_interval(
    lethe: Container, clock: Clock
) -> None:
    short = ConsoleSessions(lethe.uow, idle=timedelta(seconds=20), max_age=timedelta(hours=1), clock=clock)
    session_id = short.open(officer_caller(lethe))
    for _ in range(10):  # a request every 8 s for 80 s: never 20 s without one
        clock.now += timedelta(seconds=8)
        short.resume(session_id)
    clock.now += timedelta(seconds=20)  # then left alone for the idle limit
    with pytest.raises(Unauthenticated):
        short.resume(session_id)
