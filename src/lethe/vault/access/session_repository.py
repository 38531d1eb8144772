"""The SQL of console sessions (``console_sessions``), the one mapper of its rows, and of
the values held once for a session (``console_one_time``).

Functions over the caller's ``Connection``: the rules (idle and maximum age, how often a
session is touched; sealing a held value) stay in ``access.sessions`` and
``access.one_time``; a session is stored by the hash of its id, never the id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db, to_db
from lethe.vault.store.tables import console_one_time, console_sessions


@dataclass(frozen=True)
class Session:
    token_id: str
    tenant_id: str
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime


def add(
    conn: Connection, id_hash: str, token_id: str, tenant_id: str, now: datetime, expires_at: datetime
) -> None:
    """Store a new session, seen now."""
    conn.execute(
        console_sessions.insert().values(
            id_hash=id_hash,
            token_id=token_id,
            tenant_id=tenant_id,
            created_at=to_db(now),
            last_seen_at=to_db(now),
            expires_at=to_db(expires_at),
        )
    )


def by_hash(conn: Connection, id_hash: str) -> Session | None:
    """The session stored under this hash, or None."""
    row = conn.execute(sa.select(console_sessions).where(console_sessions.c.id_hash == id_hash)).first()
    if row is None:
        return None
    return Session(
        row.token_id,
        row.tenant_id,
        from_db(row.created_at),
        from_db(row.last_seen_at),
        from_db(row.expires_at),
    )


def touch(conn: Connection, id_hash: str, now: datetime) -> None:
    """Restart the session's idle clock."""
    conn.execute(
        console_sessions.update().where(console_sessions.c.id_hash == id_hash).values(last_seen_at=to_db(now))
    )


def remove(conn: Connection, id_hash: str) -> None:
    """Drop one session (none: nothing changes)."""
    conn.execute(console_sessions.delete().where(console_sessions.c.id_hash == id_hash))


def remove_of_token(conn: Connection, token_id: str) -> int:
    """Drop every session of a token; how many there were."""
    return conn.execute(console_sessions.delete().where(console_sessions.c.token_id == token_id)).rowcount


def purge(conn: Connection, expired_by: datetime, idle_since: datetime) -> None:
    """Drop the sessions past their maximum age or idle since ``idle_since``."""
    conn.execute(
        console_sessions.delete().where(
            sa.or_(
                console_sessions.c.expires_at <= to_db(expired_by),
                console_sessions.c.last_seen_at <= to_db(idle_since),
            )
        )
    )


def hold_value(
    conn: Connection, session_hash: str, name: str, sealed: bytes, now: datetime, expires_at: datetime
) -> None:
    """Keep a sealed value for a session under ``name`` (replacing one held there), dropping
    every value expired by ``now``."""
    t = console_one_time.c
    conn.execute(console_one_time.delete().where(t.expires_at < to_db(now)))
    conn.execute(console_one_time.delete().where(t.session_hash == session_hash, t.name == name))
    conn.execute(
        console_one_time.insert().values(
            session_hash=session_hash, name=name, sealed=sealed, expires_at=to_db(expires_at)
        )
    )


def take_value(conn: Connection, session_hash: str, name: str) -> tuple[bytes, datetime] | None:
    """The sealed value held for a session under ``name`` and its expiry (as stored), deleted
    as it is read; None if there is none."""
    t = console_one_time.c
    where = sa.and_(t.session_hash == session_hash, t.name == name)
    row = conn.execute(sa.select(t.sealed, t.expires_at).where(where)).first()
    if row is None:
        return None
    conn.execute(console_one_time.delete().where(where))
    return bytes(row.sealed), row.expires_at
