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

import sqlalchemy as sa

from lethe.keys.envelope import DecryptionFailed, decrypt_for_subject, encrypt_for_subject
from lethe.vault.clock import to_db, utcnow
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import console_one_time

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
        row = {
            "session_hash": _session_hash(session_id),
            "name": name,
            "sealed": sealed,
            "expires_at": to_db(self.clock() + TTL),
        }
        t = console_one_time.c
        with self.uow.write() as conn:
            conn.execute(console_one_time.delete().where(t.expires_at < to_db(self.clock())))
            conn.execute(
                console_one_time.delete().where(t.session_hash == row["session_hash"], t.name == name)
            )
            conn.execute(console_one_time.insert().values(**row))

    def take(self, session_id: str, name: str) -> str | None:
        """The value held under ``name`` for this session, deleted as it is read; None if
        there is none (never held, already taken, expired)."""
        t = console_one_time.c
        where = sa.and_(t.session_hash == _session_hash(session_id), t.name == name)
        with self.uow.write() as conn:
            row = conn.execute(sa.select(t.sealed, t.expires_at).where(where)).first()
            if row is None:
                return None
            conn.execute(console_one_time.delete().where(where))
        if row.expires_at < to_db(self.clock()):
            return None
        try:
            opened = decrypt_for_subject(_key(session_id), bytes(row.sealed), name.encode())
        except DecryptionFailed:
            return None
        return opened.decode()
