"""Agent sessions and their taint: what a session read or wrote decides its later writes' standing.

An agent's writes and searches may name a session (HTTP's ``Lethe-Session`` header). A
session is keyed by (tenant, agent, id): the same id sent by two agents is two sessions, and
no agent can taint or use another's. A session becomes **tainted** when it
- writes content the policy stands as external (``web_page``, ``tool_result``: the write
  itself is quarantined by the policy table; the session is tainted by it),
- is served an untrusted item (trust ``untrusted``: one no reviewer has promoted) by a search,
- or is marked by its caller (``AgentSessions.mark``, with a reason).
From then on every write of the session is stored ``quarantined`` and ``untrusted`` whatever
its declared source (the agent-memory spec: notes from a session tainted ``external`` go to
quarantine and must not be auto-loaded before review), and the memory records why
(``memories.session_taint``: a cause code with the tainting memory's id, or the caller's
reason; never content), which the review queue shows.

Only tainted sessions are stored (``agent_sessions``), under a keyed hash of the session id
(``Pseudonymizer.session_ref``). A tainted session stays tainted while it is used: every write
of it and every new taint moves its expiry to ``ttl`` after that moment (a search alone does
not). Past its expiry the id starts a fresh, untainted session: an agent's session is a
conversation, and a taint outliving it would quarantine an unrelated later conversation that
reused the id, while one idle for the whole TTL no longer holds the untrusted text in its
context. The first cause of a live taint is kept; later ones only extend it.

Exceptions: ``InvalidCommand`` (422) for a session id or reason out of bounds (``check_session_id``,
``AgentSessions.mark``), ``OutOfScope`` (403) from ``mark`` for a caller that is not an agent,
``StoreUnavailable`` (503) from the unit of work.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db, iso, to_db, utcnow
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.errors import InvalidCommand, OutOfScope
from lethe.vault.memory.validation import require_text
from lethe.vault.model import Caller, MemoryItem, Role, SessionTaint, Trust
from lethe.vault.store import driver_rows
from lethe.vault.store.db import UnitOfWork, upsert_insert
from lethe.vault.store.tables import agent_sessions
from lethe.vault.store.tenancy import for_caller

# Like the ids routes accept in URLs (``ResourceId``): printable, no spaces, bounded.
MAX_SESSION_ID = 128
_SESSION_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
MAX_TAINT_REASON = 500
DEFAULT_SESSION_TTL = timedelta(hours=4)

# Cause codes (``SessionTaint.cause``).
WROTE = "wrote_"  # + the source type, e.g. wrote_web_page
SERVED_UNTRUSTED = "served_untrusted"
MARKED = "marked"


def check_session_id(session_id: object) -> str:
    """The session id if well formed, else ``InvalidCommand`` (the id is not echoed)."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise InvalidCommand(
            f"a session id is 1 to {MAX_SESSION_ID} characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'"
        )
    return session_id


@dataclass(frozen=True)
class SessionState:
    """A session as its agent sees it: tainted or not, why, and until when (None: not stored)."""

    session_id: str
    tainted: bool
    taint: SessionTaint | None
    expires_at: datetime | None


# The session's live taint (NULL if untainted or expired), as a column a writer reads with its
# other checks (``MemoryService._checks``); parameters s_tenant_id, s_agent_id, s_ref, s_now.
TAINT_COLUMN = (
    sa.select(agent_sessions.c.taint_cause)
    .where(
        agent_sessions.c.tenant_id == sa.bindparam("s_tenant_id"),
        agent_sessions.c.agent_id == sa.bindparam("s_agent_id"),
        agent_sessions.c.session_ref == sa.bindparam("s_ref"),
        agent_sessions.c.expires_at > sa.bindparam("s_now", type_=sa.DateTime),
    )
    .scalar_subquery()
    .label("session_taint")
)
_STATE = sa.select(agent_sessions.c.taint_cause, agent_sessions.c.expires_at).where(
    agent_sessions.c.tenant_id == sa.bindparam("tenant_id"),
    agent_sessions.c.agent_id == sa.bindparam("agent_id"),
    agent_sessions.c.session_ref == sa.bindparam("session_ref"),
)


def check_params(tenant_id: str, agent_id: str, session_ref: str, now: datetime) -> dict[str, Any]:
    """The parameters of ``TAINT_COLUMN``."""
    return {"s_tenant_id": tenant_id, "s_agent_id": agent_id, "s_ref": session_ref, "s_now": to_db(now)}


@functools.lru_cache(maxsize=4)
def _taint(dialect: str) -> Any:
    """Insert the session's taint, or, if it has one, extend it: a live taint keeps its first
    cause and time, an expired one is replaced (the id starts afresh). An INSERT: it may go
    out with a write's other inserts (``store.pipeline``)."""
    insert = upsert_insert(agent_sessions, dialect)
    live = agent_sessions.c.expires_at > insert.excluded.last_seen_at
    return insert.on_conflict_do_update(
        index_elements=["tenant_id", "agent_id", "session_ref"],
        set_={
            "tainted_at": sa.case((live, agent_sessions.c.tainted_at), else_=insert.excluded.tainted_at),
            "taint_cause": sa.case((live, agent_sessions.c.taint_cause), else_=insert.excluded.taint_cause),
            "last_seen_at": insert.excluded.last_seen_at,
            "expires_at": insert.excluded.expires_at,
        },
    )


def taint(
    conn: Connection,
    tenant_id: str,
    agent_id: str,
    session_ref: str,
    cause: SessionTaint,
    now: datetime,
    ttl: timedelta,
) -> None:
    """Taint the session with ``cause`` (or keep its live taint) and extend it to ``now + ttl``:
    one statement, in the caller's write transaction."""
    row = {
        "tenant_id": tenant_id,
        "agent_id": agent_id,
        "session_ref": session_ref,
        "tainted_at": to_db(now),
        "taint_cause": cause.to_json(),
        "last_seen_at": to_db(now),
        "expires_at": to_db(now + ttl),
    }
    driver_rows.execute_rows(conn, _taint(conn.dialect.name), [row])


class AgentSessions:
    """Marking a session tainted, and tainting one a search served untrusted items.

    Exceptions: ``InvalidCommand`` (422), ``OutOfScope`` (403), ``StoreUnavailable`` (503);
    see the module docstring.
    """

    def __init__(
        self,
        uow: UnitOfWork,
        pseudonyms: Pseudonymizer,
        ttl: timedelta = DEFAULT_SESSION_TTL,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.uow = uow
        self.pseudonyms = pseudonyms
        self.ttl = ttl
        self.clock = clock

    def ref(self, caller: Caller, session_id: str) -> str:
        """The session's key for this caller: another agent's same id is another session."""
        return self.pseudonyms.session_ref(caller.tenant_id, caller.writes_as, check_session_id(session_id))

    @for_caller
    def mark(self, caller: Caller, session_id: str, reason: str) -> SessionState:
        """The caller marks its own session tainted (``marked``, with its reason); its state after."""
        if caller.role is not Role.AGENT or not caller.agent_id:
            raise OutOfScope("sessions are for agent credentials")
        require_text("reason", reason, MAX_TAINT_REASON)
        ref = self.ref(caller, session_id)
        now = self.clock()
        cause = SessionTaint(MARKED, iso(now), reason=reason)
        with self.uow.write() as conn:
            taint(conn, caller.tenant_id, caller.agent_id, ref, cause, now, self.ttl)
            row = conn.execute(
                _STATE, {"tenant_id": caller.tenant_id, "agent_id": caller.agent_id, "session_ref": ref}
            ).one()
        return SessionState(
            session_id, True, SessionTaint.from_json(row.taint_cause), from_db(row.expires_at)
        )

    @for_caller
    def served(self, caller: Caller, session_id: str | None, items: Iterable[MemoryItem]) -> None:
        """A search of the session returned ``items``: an untrusted one taints the session
        (one write, only then; nothing is read or written otherwise)."""
        if session_id is None:
            return
        untrusted = next((i for i in items if i.trust is Trust.UNTRUSTED), None)
        if untrusted is None:
            return
        now = self.clock()
        cause = SessionTaint(SERVED_UNTRUSTED, iso(now), memory_id=untrusted.id)
        ref = self.ref(caller, session_id)
        with self.uow.write() as conn:
            taint(conn, caller.tenant_id, caller.writes_as, ref, cause, now, self.ttl)
