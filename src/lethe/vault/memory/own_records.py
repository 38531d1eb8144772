"""An agent's own records: the page of memories it wrote, for it to see and delete.

A memory's owner is its ``agent_id`` (``Caller.writes_as``; the token principal that wrote
it is ``written_by`` in its ``memory.written`` event): every token of that agent may list
it, in the purposes the token covers, and delete it (``RetractionService.retract_own``).
An agent has no other way to learn what it stored: search ranks only active memories by a
query, and a read by id needs the id. Deleting takes any memory the agent owns that still
holds content (superseded and expired ones too, whose ciphertext otherwise waits for
compaction); see ``memory.retraction``.

``OwnRecords.page`` lists what the agent may still act on: its **active** and
**quarantined** memories, unexpired, newest first. Quarantined ones show their metadata
and status (the agent learns the write is pending review) but not their content: content
in quarantine is not retrieved by anyone but a reviewer until promoted, and a listing is a
retrieval. Superseded, expired, retracted and forgotten memories are never listed (they no
longer count: history is for reviewers and auditors); nor is any memory of a subject
whose erasure was accepted (the fence is up), from the 202 on. Operator memories the
agent reads are not its own and are not listed.

Pages follow ``created_seq`` (the sequence number of the event that created the memory,
assigned under the write lock: gap-free, never reused) downwards, by keyset over
``ix_memories_owner`` (tenant, agent, created_seq): the opaque cursor names the last memory
of a page, and the next page starts below its sequence number; nothing is skipped or
repeated when memories are written or deleted meanwhile, and a page costs its own rows,
not the agent's whole history.

Exceptions: ``OutOfScope`` (403) for a caller that is not an agent; ``InvalidCommand``
(422) for a limit, subject id or cursor out of bounds (a cursor naming no memory of this
agent is invalid: it is no oracle for other agents' ids); ``StoreUnavailable`` (503).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import to_db, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.custody.sealing import open_rows
from lethe.vault.errors import InvalidCommand, OutOfScope
from lethe.vault.memory import repository as repo
from lethe.vault.memory.cursors import cursor_after, memory_id_of
from lethe.vault.memory.validation import normal_subject_id
from lethe.vault.model import Caller, MemoryItem, Role, Status
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import forgotten_subjects, memories
from lethe.vault.store.tenancy import for_caller

MAX_PAGE = 100
DEFAULT_PAGE = 50
LISTED = frozenset({Status.ACTIVE, Status.QUARANTINED})  # what an owner may still see and delete
_CURSOR = "own1:"  # versioned, so the encoding can change without misreading old cursors

# No erasure accepted for the memory's subject (``forgotten_subjects`` holds the fence from
# the 202 until a reinstatement): one primary-key probe per candidate row.
NOT_FENCED = ~sa.exists().where(
    forgotten_subjects.c.tenant_id == memories.c.tenant_id,
    forgotten_subjects.c.subject_ref == memories.c.subject_ref,
)


@dataclass(frozen=True)
class OwnQuery:
    """A page of an agent's own memories: optionally one subject's, after a cursor."""

    subject_id: str | None = None
    cursor: str | None = None
    limit: int = DEFAULT_PAGE


@dataclass(frozen=True)
class OwnPage:
    items: list[MemoryItem]
    next_cursor: str | None  # None on the last page


def owned(caller: Caller) -> list[sa.ColumnElement[bool]]:
    """The memories ``caller`` owns, in its token's purposes, of subjects not being erased."""
    clauses = [
        memories.c.tenant_id == caller.tenant_id,
        memories.c.agent_id == caller.agent_id,
        NOT_FENCED,
    ]
    if caller.purposes:  # an agent token always names its purposes; none would mean all
        clauses.append(memories.c.purpose.in_(sorted(caller.purposes)))
    return clauses


def page_statement(
    caller: Caller, now: datetime, limit: int, subject_ref: str | None = None, before_seq: int | None = None
) -> sa.Select[Any]:
    """Up to ``limit`` listed memories of the caller created before ``before_seq``, newest first:
    one backward range of ``ix_memories_owner`` that stops once the page is full."""
    clauses = [
        *owned(caller),
        memories.c.status.in_(sorted(s.value for s in LISTED)),
        memories.c.expires_at > to_db(now),
    ]
    if subject_ref is not None:
        clauses.append(memories.c.subject_ref == subject_ref)
    if before_seq is not None:
        clauses.append(memories.c.created_seq < before_seq)
    return sa.select(memories).where(*clauses).order_by(memories.c.created_seq.desc()).limit(limit)


def require_agent(caller: Caller) -> None:
    if caller.role is not Role.AGENT or not caller.agent_id:
        raise OutOfScope("only an agent lists and deletes its own memories")


class OwnRecords:
    """Lists the calling agent's own memories (see the module docstring).

    Exceptions: ``OutOfScope`` (403), ``InvalidCommand`` (422), ``StoreUnavailable`` (503).
    """

    def __init__(
        self,
        uow: UnitOfWork,
        keyring: SubjectKeyring,
        pseudonyms: Pseudonymizer,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.uow = uow
        self.keyring = keyring
        self.pseudonyms = pseudonyms
        self.clock = clock

    @for_caller
    def page(self, caller: Caller, q: OwnQuery) -> OwnPage:
        """One page, newest first; active items decrypted, quarantined ones without content."""
        require_agent(caller)
        if not 1 <= q.limit <= MAX_PAGE:
            raise InvalidCommand(f"limit must be between 1 and {MAX_PAGE}")
        ref = None
        if q.subject_id is not None:
            ref = self.pseudonyms.subject_ref(caller.tenant_id, normal_subject_id(q.subject_id))
        with self.uow.read() as conn:
            before = None if q.cursor is None else _position(conn, caller, q.cursor)
            rows = list(conn.execute(page_statement(caller, self.clock(), q.limit + 1, ref, before)).all())
            page = rows[: q.limit]
            opened = open_rows(conn, self.keyring, page)
        items = []
        for r in page:
            found = opened.get((r.tenant_id, r.id))
            if found is None:  # its key is gone (an erasure under way): absent, as everywhere
                continue
            shown = found[1] if r.status == Status.ACTIVE else None  # content
            items.append(repo.to_item(r, found[0], shown, *found[2:]))  # [2:]: the sealed origin, if any
        more = len(rows) > q.limit
        return OwnPage(items, cursor_after(_CURSOR, page[-1].id) if more else None)


def _position(conn: Connection, caller: Caller, cursor: str) -> int:
    """The ``created_seq`` a cursor points after: that of one of the caller's own memories."""
    row = repo.by_id(conn, caller.tenant_id, memory_id_of(_CURSOR, cursor))
    if row is None or row.agent_id != caller.agent_id:
        raise InvalidCommand("cursor is not valid: start again without it")
    return int(row.created_seq)
