"""Review: reviewers page through quarantine, read each item, and promote or reject it.

Quarantined memories are stored but never retrieved. A reviewer lists the tenant's queue
(by agent, purpose, source type, age; cursor-paged in creation order), reads each item
decrypted with its provenance, and decides: ``promote`` makes it active and verified,
``reject`` retracts it with a reason (``memory.retraction``: the summaries citing it go
too). Only a quarantined memory can be promoted or rejected, and nobody reviews what they
wrote: only reviewers decide, a reviewer's writes are refused by the policy table, and a
memory recorded under the caller's own agent id or principal is refused here as well.

A decision carries ``expected_version`` and, optionally, an idempotency key. Sent again
with the same key (by the same caller) it returns the first result, the same body, even
after the memory moved on (superseded, retracted, decided by someone else); the same key
with a different request is an ``IdempotencyConflict``. The first result is kept as the
item's metadata (``review_decisions``); its content is opened again from the version it
was sealed at, and is left out once the memory is retracted, forgotten or expired:
nothing of a removed memory comes back through a retry.

Exceptions: ``OutOfScope`` (403), ``InvalidCommand`` (422), ``NotFound`` (404),
``VersionConflict`` and ``IdempotencyConflict`` (409); see ``ReviewService``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.canonical import canonical_json
from lethe.vault.clock import iso, parse_iso, to_db, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.sealing import open_rows
from lethe.vault.errors import IdempotencyConflict, InvalidCommand, NotFound, OutOfScope, VersionConflict
from lethe.vault.memory import repository as repo
from lethe.vault.memory.cursors import cursor_after, memory_id_of
from lethe.vault.memory.derived import derived_from
from lethe.vault.memory.retraction import MAX_REASON, Plan, new_entry, record
from lethe.vault.memory.summaries import promoted_trust
from lethe.vault.memory.validation import require_text, require_version
from lethe.vault.model import GONE, Caller, MemoryItem, Role, SourceType, Status
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import MEMORY_PROMOTED, MEMORY_QUEUED, apply
from lethe.vault.store.tables import events, memories
from lethe.vault.store.tenancy import for_caller

MAX_PAGE = 100
MAX_AGE = timedelta(days=10 * 365)
PROMOTE, REJECT = "promote", "reject"
_DONE = {PROMOTE: "promoted", REJECT: "rejected"}
_CURSOR = "rq1:"  # versioned, so the encoding can change without misreading old cursors


@dataclass(frozen=True)
class QueueQuery:
    """A page of the review queue: optional filters, the cursor of the previous page, a size."""

    agent_id: str | None = None
    purpose: str | None = None
    source_type: SourceType | None = None
    older_than: timedelta | None = None  # created at least this long ago
    cursor: str | None = None
    limit: int = 50


@dataclass(frozen=True)
class ReviewPage:
    items: list[MemoryItem]
    next_cursor: str | None  # None on the last page


@dataclass(frozen=True)
class Decision:
    item: MemoryItem
    first: bool  # False when a retried idempotency key returned the first result


class ReviewService:
    """The review queue and the decisions on it, for reviewers of the caller's tenant.

    Exceptions:
    - ``OutOfScope`` (403): the caller is not a reviewer, or wrote the memory itself.
    - ``InvalidCommand`` (422): a filter, limit, cursor, version, reason or key out of bounds.
    - ``NotFound`` (404): unknown id, another tenant's or forgotten (the same answer for all);
      ``get`` also for a memory that is not (or no longer) in quarantine.
    - ``VersionConflict`` (409): the expected version is stale, or the memory is not quarantined.
    - ``IdempotencyConflict`` (409): the key was used by this caller for another request.
    - ``StoreUnavailable`` (503): the database or the KMS cannot be reached.
    """

    def __init__(
        self,
        uow: UnitOfWork,
        keyring: SubjectKeyring,
        clock: Callable[[], datetime] = utcnow,
        *,
        log: EventLog,
    ) -> None:
        self.uow = uow
        self.keyring = keyring
        self.clock = clock
        self.log = log

    # -- the queue --------------------------------------------------------------------

    @for_caller
    def queue(self, caller: Caller, q: QueueQuery) -> ReviewPage:
        """One page of the tenant's quarantined memories, oldest first, decrypted."""
        _require_reviewer(caller)
        if not 1 <= q.limit <= MAX_PAGE:
            raise InvalidCommand(f"limit must be between 1 and {MAX_PAGE}")
        require_text("agent_id", q.agent_id, 128, required=False)
        require_text("purpose", q.purpose, 64, required=False)
        now = self.clock()
        filters = _filters(q, now)
        with self.uow.read() as conn:
            after = self._position(conn, caller.tenant_id, q.cursor)
            rows = repo.review_page(conn, caller.tenant_id, filters, after, now, q.limit + 1)
            page = rows[: q.limit]
            opened = open_rows(conn, self.keyring, page)
        items = [repo.to_item(r, *opened[(r.tenant_id, r.id)]) for r in page if (r.tenant_id, r.id) in opened]
        more = len(rows) > q.limit
        return ReviewPage(items, cursor_after(_CURSOR, page[-1].id) if more else None)

    def _position(self, conn: Connection, tenant_id: str, cursor: str | None) -> int:
        """The ``created_seq`` a cursor points after (0 for the first page)."""
        if cursor is None:
            return 0
        row = repo.by_id(conn, tenant_id, memory_id_of(_CURSOR, cursor))
        if row is None:
            raise InvalidCommand("cursor is not valid: start again without it")
        return row.created_seq

    @for_caller
    def get(self, caller: Caller, memory_id: str) -> MemoryItem:
        """One quarantined memory of the tenant, decrypted, with its provenance."""
        _require_reviewer(caller)
        with self.uow.read() as conn:
            row = repo.by_id(conn, caller.tenant_id, memory_id)
            if row is None or row.status != Status.QUARANTINED or row.expires_at <= to_db(self.clock()):
                raise NotFound("memory not found in the review queue")
            item = repo.open_item(conn, self.keyring, row)
        if item is None:
            raise NotFound("memory not found in the review queue")
        return item

    # -- decisions --------------------------------------------------------------------

    @for_caller
    def promote(
        self,
        caller: Caller,
        memory_id: str,
        expected_version: int,
        idempotency_key: str | None = None,
        reason: str | None = None,
    ) -> Decision:
        """Release a quarantined memory: active, trust ``verified`` (a summary's capped at the
        lowest of its inputs', ``memory.summaries``). Keeping a memory an erasure's residue
        hunt queued (it mentions a forgotten person) needs a ``reason``: the certificate
        of that erasure states it."""
        require_text("reason", reason, MAX_REASON, required=False)

        def promote_it(conn: Connection, row: Any, decided: dict[str, Any], now: datetime) -> None:
            if not reason and _queued_by_erasure(conn, row):
                raise InvalidCommand(
                    "this memory mentions a person whose erasure was requested: keeping it needs a reason"
                )
            payload = {
                "version": row.version + 1,
                "trust": promoted_trust(row.provenance).value,  # a summary: never above its inputs
                "promoted_by": caller.principal,
                **({"reason": reason} if reason else {}),
                **decided,
            }
            event = Event(
                MEMORY_PROMOTED, row.tenant_id, payload, row.id, row.subject_ref, occurred_at=iso(now)
            )
            apply(conn, self.log.append(conn, event))

        return self._decide(caller, PROMOTE, memory_id, expected_version, idempotency_key, reason, promote_it)

    @for_caller
    def reject(
        self,
        caller: Caller,
        memory_id: str,
        expected_version: int,
        reason: str,
        idempotency_key: str | None = None,
    ) -> Decision:
        """Retract a quarantined memory with a reason; summaries citing it are retracted too."""
        require_text("reason", reason, MAX_REASON)

        def reject_it(conn: Connection, row: Any, decided: dict[str, Any], now: datetime) -> None:
            plan = Plan([row], derived_from(conn, row.tenant_id, {row.id}, skip=GONE))
            entry = new_entry(row.tenant_id, plan, caller, reason, now, memory_id=row.id)
            record(conn, self.log, entry, plan, now, decision={"retracted_by": caller.principal, **decided})

        return self._decide(caller, REJECT, memory_id, expected_version, idempotency_key, reason, reject_it)

    def _decide(
        self,
        caller: Caller,
        action: str,
        memory_id: str,
        expected_version: int,
        key: str | None,
        reason: str | None,
        act: Callable[[Connection, Any, dict[str, Any], datetime], None],
    ) -> Decision:
        """The rules every decision shares; ``act`` appends and applies its events."""
        _require_reviewer(caller)
        require_version("expected_version", expected_version)
        require_text("idempotency_key", key, 128, required=False)
        request = _request_hash(action, memory_id, expected_version, reason)
        now = self.clock()
        with self.uow.write() as conn:
            if key is not None:
                prior = repo.decision(conn, caller.tenant_id, caller.principal, key)
                if prior is not None:
                    if not hmac.compare_digest(prior.request_hash, request):
                        raise IdempotencyConflict("this idempotency key was already used for another request")
                    return Decision(self._first_result(conn, prior), first=False)
            row = repo.by_id(conn, caller.tenant_id, memory_id)
            if row is None or row.status == Status.FORGOTTEN:
                raise NotFound("memory not found")
            if caller.wrote(row.agent_id):
                raise OutOfScope("a memory cannot be reviewed by the one who wrote it")
            if row.version != expected_version:
                raise VersionConflict(f"expected version {expected_version}, current is {row.version}")
            if row.status != Status.QUARANTINED:
                raise VersionConflict(
                    f"only a quarantined memory can be {_DONE[action]} (this one is {row.status})"
                )
            decided = {"idempotency_key": key, "request_hash": request} if key is not None else {}
            act(conn, row, decided, now)
            row = repo.by_id(conn, caller.tenant_id, memory_id)
            # A rejected memory's ciphertext is gone: the answer holds its metadata only.
            if action == PROMOTE:
                item = repo.open_item(conn, self.keyring, row)
            else:
                item = repo.to_item(row, None, None)
        if item is None:
            raise NotFound("memory not found")
        return Decision(item, first=True)

    def _first_result(self, conn: Connection, prior: Any) -> MemoryItem:
        """The item as the first decision returned it; content only while the memory still lives."""
        snapshot = json.loads(prior.result)
        for when in ("created_at", "expires_at"):
            snapshot[when] = parse_iso(snapshot[when])
        as_then = SimpleNamespace(**snapshot)
        now_row = repo.by_id(conn, prior.tenant_id, prior.memory_id)
        opened = None
        if prior.action == PROMOTE and now_row is not None and now_row.status not in (*GONE, Status.EXPIRED):
            opened = self._open_at(conn, now_row, prior.sealed_version, prior.key_generation)
        return repo.to_item(as_then, *(opened or (None, None)))

    def _open_at(
        self, conn: Connection, row: Any, sealed_version: int, generation: int
    ) -> tuple[str, str] | None:
        """The memory's subject id and content as sealed at ``sealed_version`` (None if gone)."""
        if row.sealed_version == sealed_version and row.ciphertext is not None:
            sealed = row
        else:  # rewritten since: the earlier version's ciphertext is in the log until compacted
            ciphertext = repo.written_ciphertext(conn, row.tenant_id, row.id, sealed_version)
            if ciphertext is None:
                return None
            sealed = SimpleNamespace(
                tenant_id=row.tenant_id,
                id=row.id,
                subject_ref=row.subject_ref,
                sealed_version=sealed_version,
                key_generation=generation,
                ciphertext=ciphertext,
            )
        return open_rows(conn, self.keyring, [sealed]).get((row.tenant_id, row.id))


def _queued_by_erasure(conn: Connection, row: Any) -> bool:
    """Whether the memory's latest event put it in the queue for an erasure's residue hunt."""
    e = events
    latest = conn.execute(
        sa.select(e.c.type)
        .where(e.c.memory_id == row.id, e.c.tenant_id == row.tenant_id)
        .order_by(e.c.seq.desc())
        .limit(1)
    ).scalar()
    return bool(latest == MEMORY_QUEUED)


def _require_reviewer(caller: Caller) -> None:
    if caller.role is not Role.REVIEWER:
        raise OutOfScope("only a reviewer can review quarantined memories")


def _filters(q: QueueQuery, now: datetime) -> list[sa.ColumnElement[bool]]:
    out = []
    if q.agent_id is not None:
        out.append(memories.c.agent_id == q.agent_id)
    if q.purpose is not None:
        out.append(memories.c.purpose == q.purpose)
    if q.source_type is not None:
        out.append(repo.provenance_is("source_type", SourceType(q.source_type).value))
    if q.older_than is not None:
        if not timedelta(0) <= q.older_than <= MAX_AGE:
            raise InvalidCommand("older_than must be between 0 seconds and 10 years")
        out.append(memories.c.created_at <= to_db(now - q.older_than))
    return out


def _request_hash(action: str, memory_id: str, expected_version: int, reason: str | None) -> str:
    """What makes two decisions "the same request" for an idempotency key."""
    body = {"action": action, "memory_id": memory_id, "expected_version": expected_version, "reason": reason}
    return hashlib.sha256(canonical_json(body)).hexdigest()
