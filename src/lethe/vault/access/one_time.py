"""Values a console session is shown once: held between a form's POST and its redirect.

The console files an erasure request with a POST and answers 303 to the request page, so a
reload files nothing (POST-redirect-GET). The request's verification code, which exists
only in the filing's answer, must reach that page once: ``hold`` keeps it for ``TTL``,
``take`` returns it and deletes it in one write transaction, so the first display consumes
it and a reload (or a second tab, or another node) finds nothing.

Rows of ``console_one_time`` (not process memory: any worker or node serves the redirect),
keyed by the SHA-256 of the session id and a name. The value is sealed (AES-256-GCM,
``keys.envelope``) under a key derived from the session id, which only the browser's
cookie holds: a copy of the table opens nothing. Never logged.

Exceptions: ``StoreUnavailable`` (503) from the unit of work; nothing else (a value that
is missing, expired or cannot be opened is simply not there).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from datetime import datetime, timedelta

from lethe.keys.envelope import DecryptionFailed, decrypt_for_subject, encrypt_for_subject
from lethe.vault.access import session_repository as repo
from lethe.vault.clock import to_db, utcnow
from lethe.vault.store.db import UnitOfWork

TTL = timedelta(minutes=10)  # long enough for a slow redirect, short enough to leave nothing behind


def _session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def _key(session_id: str) -> bytes:
    return hmac.new(session_id.encode(), b"lethe-console-one-time", hashlib.sha256).digest()


class OneTimeValues:
    """Holds a value for a console session until it is first taken or expires."""

    def __init__(self, uow: UnitOfWork, clock: Callable[[], datetime] = utcnow) -> None:
        self.uow = uow
        self.clock = clock

    def hold(self, session_id: str, name: str, value: str) -> None:
        """Keep ``value`` for this session under ``name`` (replacing one held there)."""
        sealed = encrypt_for_subject(_key(session_id), value.encode(), name.encode())
        now = self.clock()
        with self.uow.write() as conn:
            repo.hold_value(conn, _session_hash(session_id), name, sealed, now, now + TTL)

    def take(self, session_id: str, name: str) -> str | None:
        """The value held under ``name`` for this session, deleted as it is read; None if
        there is none (never held, already taken, expired)."""
        with self.uow.write() as conn:
            held = repo.take_value(conn, _session_hash(session_id), name)
        if held is None:
            return None
        sealed, expires_at = held
        if expires_at < to_db(self.clock()):
            return None
        try:
            opened = decrypt_for_subject(_key(session_id), sealed, name.encode())
        except DecryptionFailed:
            return None
        return opened.decode()
