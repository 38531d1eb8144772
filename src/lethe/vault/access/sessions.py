"""Console sessions: a Lethe token exchanged for a short-lived, server-side session.

A person signs in to the web console with a token once; the browser then holds only a
random session id in a cookie. Sessions are rows of ``console_sessions`` (not process
memory), so every node of a deployment serves the next request. Only the SHA-256 of the
id is stored: a copy of the table opens no session. A session ends at the first of
- idle expiry: no request for ``idle`` (the row's ``last_seen_at``, written at most every
  ``TOUCH_EVERY`` or a quarter of ``idle`` if shorter: a session ends between that much
  before ``idle`` and ``idle`` after its last request),
- absolute expiry: ``max_age`` after sign-in, however busy,
- sign-out, or the token it stands for being revoked or expiring (``resume`` returns the
  token id and the caller re-reads the token row on every request).
The CSRF token of a session is derived from its id (``csrf_token``), so it needs no
storage and the stored hash does not reveal it.

Exceptions: ``Unauthenticated`` (401) from ``resume`` for a session id that is
malformed, unknown, idle too long or past its absolute expiry (one error for all);
``StoreUnavailable`` (503) from the unit of work.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa

from lethe.vault.access import session_repository as repo
from lethe.vault.access.session_repository import Session
from lethe.vault.clock import utcnow
from lethe.vault.errors import Unauthenticated
from lethe.vault.model import Caller
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tenancy import for_caller, maintenance_job

_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{43}$")
TOUCH_EVERY = timedelta(seconds=30)  # write last_seen_at at most this often per session...
TOUCH_SHARE = 4  # ...or every quarter of the idle limit, if that is shorter


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def csrf_token(session_id: str) -> str:
    """The session's anti-forgery token: one-way from the id, so neither reveals the other."""
    return hmac.new(session_id.encode(), b"lethe-console-csrf", hashlib.sha256).hexdigest()


class ConsoleSessions:
    """Opens, resumes and closes console sessions (``console_sessions`` table)."""

    def __init__(
        self,
        uow: UnitOfWork,
        idle: timedelta = timedelta(minutes=30),
        max_age: timedelta = timedelta(hours=12),
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.uow = uow
        self.idle = idle
        self.max_age = max_age
        self.clock = clock
        # A write per request would be wasted; but a session touched less often than its idle
        # limit would be ended while in use, so a short limit is touched more often.
        self.touch_every = min(TOUCH_EVERY, idle / TOUCH_SHARE)

    @for_caller
    def open(self, caller: Caller) -> str:
        """A new session for an authenticated caller; returns the id (shown once, to the browser)."""
        now = self.clock()
        session_id = secrets.token_urlsafe(32)
        with self.uow.write() as conn:
            self._purge(conn, now)
            repo.add(conn, _hash(session_id), caller.principal, caller.tenant_id, now, now + self.max_age)
        return session_id

    @maintenance_job("console session by id")
    def resume(self, session_id: str | None) -> Session:
        """The live session behind an id, its idle clock restarted; ``Unauthenticated`` otherwise."""
        refused = Unauthenticated("sign in to the console again")
        if not session_id or not _SESSION_ID.match(session_id):
            raise refused
        now = self.clock()
        key = _hash(session_id)
        with self.uow.read() as conn:
            session = repo.by_hash(conn, key)
        if session is None:
            raise refused
        if now >= session.expires_at or now - session.last_seen_at >= self.idle:
            self.close(session_id)
            raise refused
        if now - session.last_seen_at >= self.touch_every:
            with self.uow.write() as conn:
                repo.touch(conn, key, now)
        return session

    @maintenance_job("console session by id")
    def close(self, session_id: str) -> None:
        """Sign out: the row goes; closing an unknown session changes nothing."""
        with self.uow.write() as conn:
            repo.remove(conn, _hash(session_id))

    @maintenance_job("console session by id")
    def close_for_token(self, token_id: str) -> int:
        """End every session of a token (it was revoked); returns how many there were."""
        with self.uow.write() as conn:
            return repo.remove_of_token(conn, token_id)

    def _purge(self, conn: sa.Connection, now: datetime) -> None:
        """Drop expired rows (at each sign-in: the table stays the size of the live sessions)."""
        repo.purge(conn, now, now - self.idle)
