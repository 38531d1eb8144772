"""Scoped retrieval: hard filters in SQL first, ranking second, a token budget last.

Tenant, agent and purpose come from the caller's credential and are WHERE clauses,
as are status, expiry, subject and kinds, so ranking only ever sees rows the caller
may read (its own memories and the operator's of the purpose: ``memory.visibility``),
and the cost follows the size of the scope, not of the store. Ranking is
``memory.ranking``. Only the items that make the cut are decrypted.

Lexical scores come from the inverted index (``search_postings``: one row per keyed term
hash of a memory), read by index seeks for the query's terms and the scope's memories
only; nothing scans text. A query is bounded (``MAX_QUERY_CHARS`` characters,
``MAX_QUERY_TERMS`` distinct terms after ``Pseudonymizer.term_hashes`` tokenises it) so
that the seeks per scored memory stay few.

Exceptions: ``OutOfScope`` (403) for a non-agent caller or a purpose the credential
lacks; ``InvalidCommand`` (422) for a limit, budget, kind or query out of bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import sqlalchemy as sa

from lethe.vault.clock import to_db, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.custody.sealing import open_rows
from lethe.vault.errors import InvalidCommand, OutOfScope
from lethe.vault.memory import repository as repo
from lethe.vault.memory.ranking import rank_columns, score
from lethe.vault.memory.validation import normal_subject_id
from lethe.vault.memory.visibility import agent_scope
from lethe.vault.model import Caller, Kind, Role, SearchQuery, SearchResult, Status
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import memories

MAX_LIMIT = 100
PAGE = 200  # ranked rows fetched per round trip
MAX_QUERY_CHARS = 4096  # the HTTP schema uses the same bound
MAX_QUERY_TERMS = 64  # distinct terms a query may rank by


class SearchService:
    """Scoped, ranked retrieval under a token budget (see the module docstring for the order).

    Exceptions: ``OutOfScope`` (403, not an agent credential, or a purpose it lacks),
    ``InvalidCommand`` (422, limit, budget, kind or query out of bounds),
    ``StoreUnavailable`` (503). Rows whose key is gone are left out, never an error.
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

    def search(self, caller: Caller, q: SearchQuery) -> SearchResult:
        if caller.role is not Role.AGENT or not caller.agent_id:
            raise OutOfScope("search is for agent credentials")
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
        lexical, authority, trust, recency, total = rank_columns(
            self.uow.engine.dialect.name, query_terms, now
        )
        relevant = lexical.element > 0 if query_terms else sa.false()
        filters = [
            *agent_scope(caller, q.purpose, relevant),
            memories.c.status == Status.ACTIVE.value,
            memories.c.expires_at > to_db(now),
        ]
        if q.subject_id is not None:
            subject_ref = self.pseudonyms.subject_ref(caller.tenant_id, normal_subject_id(q.subject_id))
            filters.append(memories.c.subject_ref == subject_ref)
        if q.kinds:
            filters.append(memories.c.kind.in_(list(q.kinds)))
        ranked = (
            sa.select(
                memories.c.id,
                memories.c.confidence,
                memories.c.token_estimate,
                lexical,
                authority,
                trust,
                recency,
            )
            .where(*filters)
            .order_by(total.desc(), memories.c.id)
        )
        with self.uow.read() as conn:
            chosen, used, skipped, offset = [], 0, 0, 0
            while len(chosen) < q.limit:  # page down the ranking until the limit is met
                page = conn.execute(ranked.limit(PAGE).offset(offset)).all()
                for c in page:
                    if len(chosen) == q.limit:
                        break
                    if used + c.token_estimate > q.token_budget:
                        skipped += 1
                        continue
                    chosen.append(
                        (c.id, score(c.lexical, c.authority_rank, c.trust_rank, c.confidence, c.recency))
                    )
                    used += c.token_estimate
                if len(page) < PAGE:
                    break
                offset += PAGE
            rows = repo.by_ids(conn, caller.tenant_id, [cid for cid, _ in chosen])
            opened = open_rows(conn, self.keyring, list(rows.values()))
        keys = [((caller.tenant_id, cid), score) for cid, score in chosen]
        items = [repo.to_item(rows[k[1]], *opened[k], score=score) for k, score in keys if k in opened]
        used = sum(rows[i.id].token_estimate for i in items)
        return SearchResult(items=items, used_tokens=used, skipped_over_budget=skipped)
