"""Scoped retrieval: hard filters in SQL first, ranking second, a token budget last.

Tenant, agent and purpose come from the caller's credential and are WHERE clauses,
as are status, expiry, subject and kinds, so ranking only ever sees rows the caller
may read (its own memories and the operator's of the purpose: ``memory.visibility``),
and the cost follows the size of the scope, not of the store. Ranking is
``memory.ranking``. Only the items that make the cut are decrypted.

Lexical scores come from the inverted index (``search_postings``: one row per keyed term
hash of a memory): a scope of at most ``MAX_RANKED_IN_MEMORY`` memories is read once and
ranked in memory (``memory.ranked_scope``), its hits from one primary-key range per query
term; a larger one is ranked by SQL, with an index seek per query term for each memory of
the scope. Nothing scans text. A query is bounded (``MAX_QUERY_CHARS`` characters,
``MAX_QUERY_TERMS`` distinct terms after ``Pseudonymizer.term_hashes`` tokenises it).

Exceptions: ``OutOfScope`` (403) for a non-agent caller or a purpose the credential
lacks; ``InvalidCommand`` (422) for a limit, budget, kind or query out of bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import to_db, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.custody.read_fence import pending
from lethe.vault.custody.sealing import open_rows_with_keys
from lethe.vault.errors import InvalidCommand, OutOfScope
from lethe.vault.memory import ranked_scope
from lethe.vault.memory import repository as repo
from lethe.vault.memory.agent_sessions import AgentSessions, check_session_id
from lethe.vault.memory.ranked_scope import Ranked
from lethe.vault.memory.ranking import rank_columns, score
from lethe.vault.memory.validation import normal_subject_id
from lethe.vault.memory.vectors import VectorIndex
from lethe.vault.memory.visibility import agent_scope
from lethe.vault.model import Caller, Kind, Role, SearchQuery, SearchResult, Status
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import memories
from lethe.vault.store.tenancy import for_caller

MAX_LIMIT = 100
PAGE = 200  # ranked rows fetched per round trip
MAX_QUERY_CHARS = 4096  # the HTTP schema uses the same bound
MAX_QUERY_TERMS = 64  # distinct terms a query may rank by
# Memories a search ranks in memory at most (``memory.ranked_scope``: with an embedder, the
# sealed vectors it opens and scores); a larger scope (an agent's whole purpose in a very
# large tenant) is ranked lexically by SQL a page at a time, and the result says so.
MAX_RANKED_IN_MEMORY = 20_000


class SearchService:
    """Scoped, ranked retrieval under a token budget (see the module docstring for the order).

    Exceptions: ``OutOfScope`` (403, not an agent credential, or a purpose it lacks),
    ``InvalidCommand`` (422, limit, budget, kind or query out of bounds),
    ``Unauthenticated`` (401, with ``confirm_token``: the token was revoked),
    ``StoreUnavailable`` (503). Rows whose key is gone are left out, never an error.
    """

    def __init__(
        self,
        uow: UnitOfWork,
        keyring: SubjectKeyring,
        pseudonyms: Pseudonymizer,
        clock: Callable[[], datetime] = utcnow,
        vectors: VectorIndex | None = None,
        blend: dict[str, float] | None = None,
        sessions: AgentSessions | None = None,
    ) -> None:
        self.sessions = sessions  # taints a session served untrusted items (``memory.agent_sessions``)
        self.vectors = vectors or VectorIndex(None)
        self.blend = blend  # hybrid relevance weights; None: ``ranking.RELEVANCE``
        self.uow = uow
        self.keyring = keyring
        self.pseudonyms = pseudonyms
        self.clock = clock

    @for_caller
    def search(
        self,
        caller: Caller,
        q: SearchQuery,
        *,
        confirm_token: bool = False,
        session_id: str | None = None,
    ) -> SearchResult:
        """``confirm_token``: the caller comes from ``TokenService.recall``, its revocation
        unread; the search's first statement reads it, and a revoked token is refused
        (``Unauthenticated``) before anything is ranked or opened.

        ``session_id``: the agent's session; served an untrusted item, it is tainted (one
        write, only then: nothing else is read or written for it)."""
        if caller.role is not Role.AGENT or not caller.agent_id:
            raise OutOfScope("search is for agent credentials")
        if session_id is not None:
            check_session_id(session_id)
        if not caller.may_use(q.purpose):
            raise OutOfScope("the credential does not cover this purpose")
        if not 1 <= q.limit <= MAX_LIMIT:
            raise InvalidCommand(f"limit must be between 1 and {MAX_LIMIT}")
        if q.token_budget < 1:
            raise InvalidCommand("token_budget must be positive")
        for k in q.kinds:
            if k not in Kind.__members__.values():
                raise InvalidCommand(f"unknown kind {k!r}")
        if not isinstance(q.query, str) or len(q.query) > MAX_QUERY_CHARS:
            raise InvalidCommand(f"query must be text of at most {MAX_QUERY_CHARS} characters")
        query_terms = sorted(self.pseudonyms.term_hashes(caller.tenant_id, q.query))
        if len(query_terms) > MAX_QUERY_TERMS:
            raise InvalidCommand(
                f"a query may have at most {MAX_QUERY_TERMS} distinct terms (words of two or more characters)"
            )
        now = self.clock()
        subject_ref = None
        if q.subject_id is not None:
            subject_ref = self.pseudonyms.subject_ref(caller.tenant_id, normal_subject_id(q.subject_id))
        with self.uow.read() as conn:
            confirming = caller.principal if confirm_token else None
            request = ranked_scope.Request(
                caller, q.purpose, q.query, query_terms, now, subject_ref, q.kinds, self.blend, confirming
            )
            in_memory = ranked_scope.ranked(conn, self.keyring, self.vectors, request, MAX_RANKED_IN_MEMORY)
            kept = None if in_memory is None else in_memory.kept
            recall = "lexical"
            if in_memory is not None:
                ranking = in_memory.order
                # Hybrid only when every memory of the scope has its vector: one written by a
                # process without an embedder is ranked lexically until the server fills it in.
                hybrid = self.vectors.embedder is not None and in_memory.every_vector
                recall = "hybrid" if hybrid else "lexical"
            else:
                ranking = self._ranked_by_sql(conn, caller, q, query_terms, now, subject_ref)
            chosen: list[tuple[str, int, dict[str, float]]] = []
            used, skipped = 0, 0
            for cid, tokens, parts in ranking:  # down the ranking until the limit is met
                if len(chosen) == q.limit:
                    break
                if used + tokens > q.token_budget:
                    skipped += 1
                    continue
                chosen.append((cid, tokens, parts))
                used += tokens
            found = {} if kept is None else {c: i for c, _, s in chosen if (i := kept.get(c, s)) is not None}
            rows = repo.by_ids_with_keys(conn, caller.tenant_id, [c for c, _, _ in chosen if c not in found])
        opened = open_rows_with_keys(self.keyring, list(rows.values()))
        t = caller.tenant_id
        fresh = {c: repo.to_item(rows[c], *opened[(t, c)], score=s) for c, _, s in chosen if (t, c) in opened}
        if kept is not None:
            kept.add(fresh.values())
        found.update(fresh)  # the kept and the opened: rows whose key is gone are in neither
        items = [found[c] for c, _, _ in chosen if c in found]
        used = sum(tokens for c, tokens, _ in chosen if c in found)
        if self.sessions is not None:
            self.sessions.served(caller, session_id, items)
        return SearchResult(items=items, used_tokens=used, skipped_over_budget=skipped, recall=recall)

    def _ranked_by_sql(
        self,
        conn: Connection,
        caller: Caller,
        q: SearchQuery,
        query_terms: list[str],
        now: datetime,
        subject_ref: str | None,
    ) -> Iterator[Ranked]:
        """A scope too large to rank in memory, ranked lexically by the database a page at a time."""
        lexical, authority, trust, recency, total = rank_columns(
            self.uow.engine.dialect.name, query_terms, now
        )
        relevant = lexical.element > 0 if query_terms else sa.false()
        columns = (
            memories.c.id,
            memories.c.subject_ref,
            memories.c.confidence,
            memories.c.token_estimate,
            lexical,
            authority,
            trust,
            recency,
        )
        filters = [
            *agent_scope(caller, q.purpose, relevant),
            memories.c.status == Status.ACTIVE.value,
            memories.c.expires_at > to_db(now),
        ]
        if subject_ref is not None:
            filters.append(memories.c.subject_ref == subject_ref)
        if q.kinds:
            filters.append(memories.c.kind.in_(list(q.kinds)))
        ranked = sa.select(*columns).where(*filters).order_by(total.desc(), memories.c.id)
        return _pages(conn, ranked, pending(conn, caller.tenant_id))


def _pages(conn: Connection, ranked: sa.Select, fenced: frozenset[str]) -> Iterator[Ranked]:
    """The SQL ranking, ``PAGE`` rows per round trip, as long as the caller reads on; rows
    of a subject whose erasure was accepted (``fenced``, ``custody.read_fence``) left out."""
    offset = 0
    while True:
        page = conn.execute(ranked.limit(PAGE).offset(offset)).all()
        for c in page:
            if c.subject_ref in fenced:
                continue
            yield (
                c.id,
                c.token_estimate,
                score(c.lexical, c.authority_rank, c.trust_rank, c.confidence, c.recency),
            )
        if len(page) < PAGE:
            return
        offset += PAGE
