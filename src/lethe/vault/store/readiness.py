"""Readiness: can this process do its job right now? Each check says what it cannot do.

A ``SELECT 1`` answers even when every write fails (a store that is read-only, full,
locked for good or damaged), so readiness makes a real write: a no-op update committed
through the same write transaction every command uses (the same locks, the same
commit). It also reads the log's tail, checks the schema is the one this release
writes, and asks the KMS for its health. Each check is bounded by a short lock wait,
so a probe answers in seconds while a long VACUUM holds the store, saying so. With
PostgreSQL's tenant wall on (``UnitOfWork.row_security``), it also checks that the wall
stands for this process: its transactions run as the application role and Row-Level
Security is active for it on every walled table (``store.tenancy``); a wall someone took
down (a policy dropped, RLS disabled, the role made a superuser) fails readiness.

Exceptions: none; failures are reported as failed checks (with the error's type only:
driver messages can quote parameters; ``WallDown`` for a tenant wall that does not stand).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from lethe.keys.protocol import KeyManager
from lethe.vault.store import tenancy
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.schema import require_current
from lethe.vault.store.tables import events

PROBE_LOCK_WAIT_MS = 2000


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = "ok"


class WallDown(Exception):
    """The tenant wall is on but does not stand for this process's transactions."""


def check_readiness(uow: UnitOfWork, kms: KeyManager) -> list[Check]:
    """Every check, in order; a failed one does not stop the others."""
    checks = [
        _run("database read", lambda: _read(uow)),
        _run("database write", lambda: _write(uow)),
        _run("schema", lambda: require_current(uow.engine)),
        _run("key management service", kms.health),
    ]
    if uow.row_security:
        checks.append(_run("tenant wall", lambda: _wall_stands(uow)))
    return checks


_WALL = sa.text(
    "SELECT current_user AS role, bool_and(row_security_active(t)) AS active"
    " FROM unnest(CAST(:tables AS text[])) AS t"
)


def _wall_stands(uow: UnitOfWork) -> None:
    """A transaction of this process (no tenant) runs as the application role, with
    Row-Level Security active on every walled table."""
    with uow.read() as conn:
        row = conn.execute(_WALL, {"tables": list(tenancy.WALLED_TABLES)}).one()
    if row.role != tenancy.APP_ROLE or not row.active:
        raise WallDown()


def _run(name: str, check: Callable[[], object]) -> Check:
    try:
        check()
    except Exception as exc:
        return Check(name, False, f"{type(exc).__name__}")
    return Check(name, True)


def _read(uow: UnitOfWork) -> None:
    with uow.read() as conn:
        conn.execute(sa.select(events.c.seq).order_by(events.c.seq.desc()).limit(1)).first()


def _write(uow: UnitOfWork) -> None:
    with uow.write(lock_wait_ms=PROBE_LOCK_WAIT_MS) as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = version_num"))


def holds_data(conn: sa.Connection) -> bool:
    """Whether the store holds any event: a store in use, not a new one (``lethe init``
    mints a pepper only for a new one)."""
    return conn.execute(sa.text("SELECT 1 FROM events LIMIT 1")).first() is not None
