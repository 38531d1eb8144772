"""The SQL of subjects' key generations (``subject_keys``) and the forget fence
(``forgotten_subjects``).

Functions over the caller's ``Connection``, so each joins the transaction its caller opened:
the rules (when a key is made, served, revoked; what the KMS does) stay in
``custody.keyring``, and how key rows are stored stays here. The rows are returned as read
(``sa.Row`` with the table's columns); ``write_verdict`` maps the fence's three columns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import to_db
from lethe.vault.store.tables import forgotten_subjects, subject_keys

ACTIVE = "active"
DESTROYED = "destroyed"
WRITABLE, FORGOTTEN, STALE = "writable", "forgotten", "stale"  # ``SubjectKeyring.writable``

_p: dict[str, sa.BindParameter[Any]] = {
    n: sa.bindparam(n) for n in ("tenant_id", "subject_ref", "generation")
}
_of_subject = (subject_keys.c.tenant_id == _p["tenant_id"], subject_keys.c.subject_ref == _p["subject_ref"])
# Built once: the fence, this generation's state and the newest generation, in one statement.
WRITABLE_COLUMNS = (
    sa.select(subject_keys.c.state)
    .where(*_of_subject, subject_keys.c.generation == _p["generation"])
    .scalar_subquery(),
    sa.exists().where(
        forgotten_subjects.c.tenant_id == _p["tenant_id"],
        forgotten_subjects.c.subject_ref == _p["subject_ref"],
    ),
    sa.select(sa.func.max(subject_keys.c.generation)).where(*_of_subject).scalar_subquery(),
)  # parameters tenant_id, subject_ref, generation; a writer may read them with its other checks
_WRITABLE = sa.select(*WRITABLE_COLUMNS)


def write_verdict(generation: int, state: str | None, fenced: bool, newest: int | None) -> str:
    """``SubjectKeyring.writable``'s answer from ``WRITABLE_COLUMNS`` as read."""
    if fenced:
        return FORGOTTEN
    return WRITABLE if state == ACTIVE and newest == generation else STALE


def writable(conn: Connection, tenant_id: str, subject_ref: str, generation: int) -> str:
    """``write_verdict`` of one generation, read by one statement."""
    state, fenced, newest = conn.execute(
        _WRITABLE, {"tenant_id": tenant_id, "subject_ref": subject_ref, "generation": generation}
    ).one()
    return write_verdict(generation, state, fenced, newest)


def newest(conn: Connection, tenant_id: str, subject_ref: str) -> sa.Row[Any] | None:
    """The newest key row of the subject (any state), or None."""
    return conn.execute(
        sa.select(subject_keys)
        .where(subject_keys.c.tenant_id == tenant_id, subject_keys.c.subject_ref == subject_ref)
        .order_by(subject_keys.c.generation.desc())
        .limit(1)
    ).first()


def generations(conn: Connection, tenant_id: str, subject_ref: str) -> list[Any]:
    """Every key row of the subject (any state), oldest generation first."""
    return list(
        conn.execute(
            sa.select(subject_keys)
            .where(subject_keys.c.tenant_id == tenant_id, subject_keys.c.subject_ref == subject_ref)
            .order_by(subject_keys.c.generation)
        ).all()
    )


def active_keys(conn: Connection) -> list[Any]:
    """Every key row the store holds as live (any tenant, any subject)."""
    return list(conn.execute(sa.select(subject_keys).where(subject_keys.c.state == ACTIVE)).all())


def mark_destroyed(conn: Connection, key_names: list[str], at: datetime) -> list[str]:
    """Mark these keys destroyed (rows still marked live only); the tenants they were of."""
    live = sa.and_(subject_keys.c.key_name.in_(key_names), subject_keys.c.state == ACTIVE)
    tenants = conn.execute(sa.select(subject_keys.c.tenant_id).where(live).distinct()).scalars().all()
    conn.execute(subject_keys.update().where(live).values(state=DESTROYED, destroyed_at=to_db(at)))
    return list(tenants)


def is_fenced(conn: Connection, tenant_id: str, subject_ref: str) -> bool:
    """Whether the subject's forget fence is up."""
    return (
        conn.execute(
            sa.select(forgotten_subjects.c.generation).where(
                forgotten_subjects.c.tenant_id == tenant_id,
                forgotten_subjects.c.subject_ref == subject_ref,
            )
        ).first()
        is not None
    )


def add_generation(
    conn: Connection,
    tenant_id: str,
    subject_ref: str,
    generation: int,
    key_name: str,
    backend: str,
    wrapped_dek: bytes,
    at: datetime,
) -> None:
    """Store a new live generation of the subject's key, wrapped."""
    conn.execute(
        subject_keys.insert().values(
            tenant_id=tenant_id,
            subject_ref=subject_ref,
            generation=generation,
            key_name=key_name,
            backend=backend,
            wrapped_dek=wrapped_dek,
            state=ACTIVE,
            created_at=to_db(at),
        )
    )
