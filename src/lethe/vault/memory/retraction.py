"""Retraction: remove one memory, or everything written from one source, and what was built on it.

An erasure answers "forget this person"; a retraction answers "this claim is wrong or
poisoned": a fact read from a compromised web page, the output of a hijacked tool run, a
quarantined item a reviewer rejects. By id it takes one memory; by ``source_ref`` every
memory of the tenant whose provenance names that source, whatever its agent, purpose or
subject. Either way it also takes the summaries that cite them, transitively
(``memory.derived``); by source, also summaries that cite the source itself (written
before summaries were checked, ``memory.summaries``: a summary cites memory ids only now).

A retracted memory gets the status ``retracted``: in the same transaction it leaves every
retrieval (search, reads, the review queue) in every agent's and purpose's view, loses its
ciphertext in the projection and its search-index entry; the next compaction drops its
ciphertext from the event log. The subject is untouched: its key, its other memories and
new writes about it stay as they were (an erasure fences and shreds the subject; erasing
it later turns its retracted memories into forgotten ones).

Each memory removed is one ``memory.retracted`` event; the retraction itself is one
``retraction.recorded`` event with ids and counts (plus the reason and the source's keyed
hash, never the source ref itself: a profile URL names a person, and the ledger outlives
every forget), projected into the ``retractions`` ledger that a backup restore re-applies
(``memory.retraction_ledger``).

An agent retracts its own memories the same way (``retract_own``, ``DELETE
/v1/memories/{id}``): one memory it owns (``memory.own_records``), with the same cascade,
events and ledger entry, the reason ``deleted by its owner`` and the agent's token
principal as ``requested_by``.

Exceptions: ``OutOfScope`` (403), ``InvalidCommand`` (422), ``NotFound`` (404),
``VersionConflict`` (409); see ``RetractionService``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import iso, utcnow
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.errors import InvalidCommand, NotFound, OutOfScope, VersionConflict
from lethe.vault.memory import repository as repo
from lethe.vault.memory.derived import derived_from
from lethe.vault.memory.own_records import owned, require_agent
from lethe.vault.memory.validation import require_text
from lethe.vault.model import GONE, Caller, Role, Status
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import MEMORY_RETRACTED, RETRACTION_RECORDED, apply_many
from lethe.vault.store.tables import memories
from lethe.vault.store.tenancy import for_caller

RETRACTORS = frozenset({Role.REVIEWER, Role.PRIVACY_OFFICER})
MAX_REASON = 500
MAX_SOURCE_REF = 512  # as a write's provenance.source_ref
OWNER_DELETED = "deleted by its owner"  # the reason of an agent's retraction of its own memory
_NOT_GONE = memories.c.status.not_in(sorted(s.value for s in GONE))


@dataclass(frozen=True)
class Retraction:
    """What a retraction removed (or, for a dry run, would remove): memory and summary ids."""

    id: str | None  # None for a dry run: nothing was recorded
    tenant_id: str
    memory_ids: list[str]
    derived_ids: list[str]
    dry_run: bool


@dataclass(frozen=True)
class LedgerEntry:
    """One retraction as its ledger keeps it: enough to apply it again after a restore."""

    id: str
    tenant_id: str
    requested_by: str
    reason: str
    memory_id: str | None
    source_ref: str | None  # only in a ledger entry recorded before sources were hashed
    memory_ids: tuple[str, ...]
    derived_ids: tuple[str, ...]
    retracted_at: str
    source_hash: str | None = None  # ``Pseudonymizer.source_hash`` of a retraction by source


@dataclass(frozen=True)
class Plan:
    """The live memories a retraction takes (``targets``) and the summaries built on them."""

    targets: list[repo.Row]
    derived: list[repo.Row]


def plan_for_memory(conn: Connection, tenant_id: str, memory_id: str) -> Plan:
    """One memory of the tenant and what cites it; a forgotten one is not found."""
    row = repo.by_id(conn, tenant_id, memory_id)
    if row is None or row.status == Status.FORGOTTEN:
        raise NotFound("memory not found")
    if row.status == Status.RETRACTED:
        raise VersionConflict("this memory is already retracted")
    return Plan([row], derived_from(conn, tenant_id, {row.id}, skip=GONE))


def plan_for_source(conn: Connection, tenant_id: str, source_ref: str, source_hash: str) -> Plan:
    """Every live memory of the tenant written from the source, and what cites it or the source.

    Memories are found by the source's keyed hash in the search index (``source_hash``:
    ``Pseudonymizer.source_hash``), never by the value, which is sealed with their content:
    so a memory that has already left retrieval (superseded, expired) is no longer found by
    its source, nor are the summaries that cite only it."""
    rows = repo.from_source(conn, tenant_id, source_ref, source_hash)
    roots = {source_ref, *(r.id for r in rows)}  # dead ones too: a live summary may cite them
    return Plan([r for r in rows if r.status not in GONE], derived_from(conn, tenant_id, roots, skip=GONE))


def record(
    conn: Connection,
    log: EventLog,
    entry: LedgerEntry,
    plan: Plan,
    now: datetime,
    *,
    decision: dict[str, Any] | None = None,
    reapplied: bool = False,
) -> None:
    """Append and apply one retraction inside the caller's write transaction.

    ``decision`` (a reviewer's reject) goes into the targets' events: who decided, and
    the idempotency key and request hash a retry is answered from.
    """
    at = iso(now)

    def retracted(r: repo.Row, cause: str, extra: dict[str, Any]) -> Event:
        payload = {"version": r.version + 1, "retraction_id": entry.id, "cause": cause, **extra}
        return Event(MEMORY_RETRACTED, entry.tenant_id, payload, r.id, r.subject_ref, occurred_at=at)

    removed = [*plan.targets, *plan.derived]
    index_entries = repo.count_index(conn, entry.tenant_id, memory_ids=[r.id for r in removed])
    summary = {
        "retraction_id": entry.id,
        "requested_by": entry.requested_by,
        "reason": entry.reason,
        "memory_id": entry.memory_id,
        **({"source_ref": entry.source_ref} if entry.source_ref else {}),  # a re-applied older entry
        "source_hash": entry.source_hash,
        "memory_ids": list(entry.memory_ids),
        "derived_ids": list(entry.derived_ids),
        "retracted_at": entry.retracted_at,
        "memories_retracted": len(plan.targets),
        "derived_retracted": len(plan.derived),
        "index_entries_removed": index_entries,
        "reapplied_after_restore": reapplied,
    }
    batch = [
        *(retracted(r, "retracted", decision or {}) for r in plan.targets),
        *(retracted(r, "derived", {}) for r in plan.derived),
        Event(RETRACTION_RECORDED, entry.tenant_id, summary, occurred_at=at),
    ]
    apply_many(conn, log.append_many(conn, batch))


def new_entry(
    tenant_id: str,
    plan: Plan,
    caller: Caller,
    reason: str,
    now: datetime,
    memory_id: str | None = None,
    source_hash: str | None = None,
) -> LedgerEntry:
    """The ledger entry of a retraction about to be recorded (a fresh id); a retraction by
    source records the source's keyed hash, never the source."""
    return LedgerEntry(
        id=str(uuid.uuid4()),
        tenant_id=tenant_id,
        requested_by=caller.principal,
        reason=reason,
        memory_id=memory_id,
        source_ref=None,
        memory_ids=tuple(r.id for r in plan.targets),
        derived_ids=tuple(r.id for r in plan.derived),
        retracted_at=iso(now),
        source_hash=source_hash,
    )


class RetractionService:
    """Retracts one memory, or everything from one source, for reviewers and privacy officers.

    Exceptions:
    - ``OutOfScope`` (403): the caller is neither a reviewer nor a privacy officer.
    - ``InvalidCommand`` (422): not exactly one of ``memory_id`` and ``source_ref``, or a
      reason, id or source ref out of bounds; nothing was written.
    - ``NotFound`` (404): the memory id is unknown, another tenant's, or forgotten (the
      three answers are the same).
    - ``VersionConflict`` (409): the memory is already retracted.
    - ``StoreUnavailable`` (503): the database cannot be reached.
    A source that matches nothing is not an error: the retraction is recorded, empty.
    ``retract_own`` (agents) raises ``OutOfScope`` for any other role and ``NotFound`` for
    anything but a memory of the agent's own that it may still list.
    """

    def __init__(
        self,
        uow: UnitOfWork,
        clock: Callable[[], datetime] = utcnow,
        *,
        log: EventLog,
        pseudonyms: Pseudonymizer,
    ) -> None:
        self.uow = uow
        self.pseudonyms = pseudonyms
        self.clock = clock
        self.log = log

    @for_caller
    def retract(
        self,
        caller: Caller,
        *,
        memory_id: str | None = None,
        source_ref: str | None = None,
        reason: str,
        dry_run: bool = False,
    ) -> Retraction:
        """Retract now (one transaction), or with ``dry_run`` list what would go and write nothing."""
        if caller.role not in RETRACTORS:
            raise OutOfScope("only a reviewer or a privacy officer can retract memories")
        if (memory_id is None) == (source_ref is None):
            raise InvalidCommand("give exactly one of memory_id and source_ref")
        require_text("reason", reason, MAX_REASON)
        require_text("memory_id", memory_id, 64, required=False)
        require_text("source_ref", source_ref, MAX_SOURCE_REF, required=False)
        tenant_id, now = caller.tenant_id, self.clock()
        source_hash = None if source_ref is None else self.pseudonyms.source_hash(tenant_id, source_ref)
        with self.uow.read() if dry_run else self.uow.write() as conn:
            if source_ref is None:
                assert memory_id is not None
                plan = plan_for_memory(conn, tenant_id, memory_id)
            else:
                assert source_hash is not None
                plan = plan_for_source(conn, tenant_id, source_ref, source_hash)
            if dry_run:
                return _outcome(None, tenant_id, plan)
            entry = new_entry(tenant_id, plan, caller, reason, now, memory_id, source_hash)
            record(conn, self.log, entry, plan, now)
        return _outcome(entry.id, tenant_id, plan)

    @for_caller
    def retract_own(self, caller: Caller, memory_id: str) -> Retraction | None:
        """An agent retracts one of its own memories (``DELETE /v1/memories/{id}``).

        It takes a memory the agent owns (``own_records.owned``: its agent id, a purpose of
        its token, a subject with no erasure under way) that still holds content: active,
        quarantined, superseded or expired. Anything else (unknown, another tenant's or
        agent's, an operator's, forgotten) is ``NotFound``, one answer for all. A memory of
        its own already retracted (by an earlier delete, a reviewer, a retraction by source)
        returns None and records nothing: a repeated delete is answered as the first.
        """
        require_agent(caller)
        require_text("memory_id", memory_id, 64)
        tenant_id, now = caller.tenant_id, self.clock()
        with self.uow.write() as conn:
            row = conn.execute(
                sa.select(memories).where(*owned(caller), memories.c.id == memory_id, _NOT_GONE)
            ).first()
            if row is None:
                if _own_and_retracted(repo.by_id(conn, tenant_id, memory_id), caller):
                    return None
                raise NotFound("memory not found")
            plan = Plan([row], derived_from(conn, tenant_id, {row.id}, skip=GONE))
            entry = new_entry(tenant_id, plan, caller, OWNER_DELETED, now, memory_id=row.id)
            record(conn, self.log, entry, plan, now)
        return _outcome(entry.id, tenant_id, plan)


def _own_and_retracted(row: repo.Row | None, caller: Caller) -> bool:
    return (
        row is not None
        and row.status == Status.RETRACTED
        and row.agent_id == caller.agent_id
        and caller.may_use(row.purpose)
    )


def _outcome(retraction_id: str | None, tenant_id: str, plan: Plan) -> Retraction:
    return Retraction(
        retraction_id,
        tenant_id,
        _ids(plan.targets),
        _ids(plan.derived),
        dry_run=retraction_id is None,
    )


def _ids(rows: Sequence[repo.Row]) -> list[str]:
    return sorted(r.id for r in rows)
