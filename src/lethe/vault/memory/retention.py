"""Retention: how long a memory is kept, and who may keep it longer.

A write is kept for its kind's default TTL, or what it asks for up to its kind's maximum,
and never longer than its source's cap (``Limits.window``: agents' inferences and
summaries go sooner than users' statements and operators' facts). After that only a
*reviewer's confirmation* extends it: ``confirm`` sets a new expiry from now, up to the
kind's maximum (the source cap is what the confirmation lifts), for a live, active
memory the reviewer did not write. The writing agent never extends its own memory: an
update by id keeps the memory's expiry or shortens it (``kept_until``), the review and
retention routes are refused to agents, and a correction is a new memory with its own
(capped) retention. Each confirmation is a ``memory.retention_confirmed`` event (ids,
expiries and who confirmed; never content), applied by the projection like any other.

Exceptions: ``OutOfScope`` (403), ``InvalidCommand``/``InvalidTtl`` (422), ``NotFound``
(404), ``VersionConflict`` (409), ``StoreUnavailable`` (503); see ``RetentionService``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from lethe.vault.clock import iso, to_db, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.errors import InvalidTtl, NotFound, OutOfScope, VersionConflict
from lethe.vault.memory import repository as repo
from lethe.vault.memory.validation import require_version
from lethe.vault.model import GONE, Caller, Kind, MemoryItem, Role, Status
from lethe.vault.policy import Limits
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import MEMORY_RETENTION_CONFIRMED, apply
from lethe.vault.store.tenancy import for_caller


def kept_until(asked: datetime, current: datetime | None) -> datetime:
    """The expiry of a write: what it asked for, but never past the memory's current expiry."""
    return asked if current is None else min(asked, current)


class RetentionService:
    """Reviewers' confirmations that keep a memory longer than its source allows.

    Exceptions:
    - ``OutOfScope`` (403): the caller is not a reviewer, or wrote the memory itself.
    - ``InvalidTtl`` (422): the TTL is not positive, exceeds the kind's maximum, or would
      not extend the memory's retention (a confirmation never shortens it).
    - ``InvalidCommand`` (422): the expected version is out of bounds.
    - ``NotFound`` (404): unknown id, another tenant's, retracted, forgotten or expired.
    - ``VersionConflict`` (409): the expected version is stale, or the memory is not active
      (quarantined memories are promoted first; superseded ones are history).
    - ``StoreUnavailable`` (503).
    """

    def __init__(
        self,
        uow: UnitOfWork,
        keyring: SubjectKeyring,
        limits: Limits | None = None,
        clock: Callable[[], datetime] = utcnow,
        *,
        log: EventLog,
    ) -> None:
        self.uow = uow
        self.keyring = keyring
        self.limits = limits or Limits()
        self.clock = clock
        self.log = log

    @for_caller
    def confirm(
        self, caller: Caller, memory_id: str, expected_version: int, ttl: timedelta | None = None
    ) -> MemoryItem:
        """Keep an active memory until now + ``ttl`` (default: its kind's default TTL)."""
        if caller.role is not Role.REVIEWER:
            raise OutOfScope("only a reviewer confirms a memory's retention")
        require_version("expected_version", expected_version)
        now = self.clock()
        with self.uow.write() as conn:
            row = repo.by_id(conn, caller.tenant_id, memory_id)
            if row is None or row.status in (*GONE, Status.EXPIRED) or row.expires_at <= to_db(now):
                raise NotFound("memory not found")
            if caller.wrote(row.agent_id):
                raise OutOfScope("nobody confirms the retention of a memory they wrote")
            if row.version != expected_version:
                raise VersionConflict(f"expected version {expected_version}, current is {row.version}")
            if row.status != Status.ACTIVE:
                raise VersionConflict(f"a {row.status} memory's retention cannot be confirmed")
            default, maximum = self.limits.ttl_for(Kind(row.kind))
            ttl = default if ttl is None else ttl
            if ttl <= timedelta(0) or ttl > maximum:
                raise InvalidTtl(
                    f"a confirmed TTL is positive and at most {maximum.days} days for kind {row.kind}"
                )
            until = now + ttl
            if to_db(until) <= row.expires_at:
                raise InvalidTtl(
                    "a confirmation only extends retention: the memory is already kept that long"
                )
            event = Event(
                MEMORY_RETENTION_CONFIRMED,
                caller.tenant_id,
                {
                    "version": row.version + 1,
                    "expires_at": iso(until),
                    "previous_expires_at": iso(row.expires_at.replace(tzinfo=now.tzinfo)),
                    "confirmed_by": caller.principal,
                },
                row.id,
                row.subject_ref,
                occurred_at=iso(now),
            )
            apply(conn, self.log.append(conn, event))
            item = repo.open_item(conn, self.keyring, repo.by_id(conn, caller.tenant_id, memory_id))
        if item is None:
            raise NotFound("memory not found")
        return item
