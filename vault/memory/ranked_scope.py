"""One scope ranked in memory: lexical hits from the postings, with an embedder the
scope's sealed vectors opened and scored (hybrid), standing, confidence and recency from
the rows; as arrays. Scopes over the cap are ranked by SQL instead (``memory.search``).

The cost of a search, for a scope of n memories and a query of t terms: one read of the
scope's rows with their sealed vectors (the hard filters are its WHERE clause), one grouped
read of the postings of the t terms in the tenant (a primary-key range per term: it follows
those terms' postings, not n x t seeks), one AEAD open per vector under one context per
subject key, and an n x d matrix product. Score dictionaries are built only for the rows
the caller reads down to (the limit and the budget): what the search returns.

The order and the scores are those of ``ranking.score`` (the same operations on the same
floats, in the same order), ties broken by memory id like the lexical search's SQL.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import to_db
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.opened_vectors import OpenedVectors
from lethe.vault.custody.sealing import scope_vectors, sealed_by_id
from lethe.vault.memory.ranking import RELEVANCE, WEIGHTS, lexical_hits, rank_time, score, standing_columns
from lethe.vault.memory.vectors import VectorIndex
from lethe.vault.memory.visibility import scope_branches
from lethe.vault.model import Caller, Status
from lethe.vault.store.tables import memories, memory_vectors, search_postings

Ranked = tuple[str, int, dict[str, float]]


@dataclass
class Scope:
    """The scope's rows as columns (one list per column, row i across them), in the order
    of ``_statement``'s select list, and how it was read (to read its sealed vectors the
    same way)."""

    ids: list[str]
    tokens: list[int]
    hits: list[int]
    authority: list[float]
    trust: list[float]
    recency: list[float]
    confidence: list[float]
    subject_refs: list[str]
    key_generations: list[int]
    sealed_versions: list[int]
    shape: tuple[str, bool, bool, bool, int] = ("", False, False, False, 0)
    params: dict[str, Any] = field(default_factory=dict)
    # A cold scope's sealed vectors, read with its rows: (memory_id, subject_ref, generation,
    # version, sealed); None when the rows were read alone (a warm scope).
    sealed: list[tuple[str, str, int, int, bytes]] | None = None

    def __len__(self) -> int:
        return len(self.ids)


# Missing vectors up to this many are read by id; more, by the scope's own statement
# joined with memory_vectors (a cold scope reads its vectors in one pass, as it used to).
READ_BY_ID = 64


def scope_rows(
    conn: Connection,
    caller: Caller,
    purpose: str,
    vectors: VectorIndex,
    query_terms: list[str],
    now: datetime,
    subject_ref: str | None,
    kinds: Sequence[str],
    cap: int,
    opened: OpenedVectors | None = None,
) -> Scope | None:
    """The scope's active, unexpired rows (of one subject, of some kinds, if given) with their
    postings hits, in one statement; None if the scope holds more than ``cap`` memories. An
    operator memory is in the scope only when a query term matches it (``memory.visibility``).
    With an embedder, a scope whose vectors ``opened`` does not hold yet (cold) is read with
    its sealed vectors in the same statement."""
    dialect = conn.dialect.name
    shape = (dialect, bool(query_terms), subject_ref is not None, bool(kinds), cap)
    # Warm per agent and purpose: a narrower search (one subject, some kinds) of a warm scope
    # finds its vectors cached; a wider one after a narrow one reads the rest by its misses.
    warm_key = (caller.tenant_id, caller.agent_id, purpose, vectors.model)
    with_sealed = vectors.model is not None and not (opened is not None and opened.scope_is_warm(warm_key))
    stmt = _statement(*shape, vectors.model if with_sealed else None)
    params: dict[str, Any] = {
        "tenant": caller.tenant_id,
        "agent": caller.agent_id,
        "purpose": purpose,
        "now": to_db(now),
        "now_rank": rank_time(dialect, now),
    }
    if query_terms:
        params["query_hashes"] = query_terms
    if subject_ref is not None:
        params["subject_ref"] = subject_ref
    if kinds:
        params["kinds"] = list(kinds)
    rows = conn.execute(stmt, params).all()
    if len(rows) > cap:
        return None
    width = 14 if with_sealed else 10
    columns = [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]
    sealed = None
    if with_sealed:
        refs, gens, versions, blobs = columns[10:]
        sealed = [
            (m, r, g, v, b)
            for m, r, g, v, b in zip(columns[0], refs, gens, versions, blobs, strict=True)
            if b is not None
        ]
        if opened is not None:
            keys = {(caller.tenant_id, r, g) for r, g in zip(refs, gens, strict=True) if r is not None}
            opened.note_scope(warm_key, keys)
    return Scope(*columns[:10], shape=shape, params=params, sealed=sealed)


@functools.lru_cache(maxsize=64)
def _statement(
    dialect: str, terms: bool, subject: bool, kinds: bool, cap: int, model: str | None = None
) -> sa.CompoundSelect | sa.Select:
    """The scope statement of one shape, built once: the values are bound parameters
    (building the expression was a tenth of a search). With ``model``, each row also
    carries its sealed vector of that model (None if it has none)."""
    now_rank = sa.bindparam("now_rank", type_=sa.String if dialect == "sqlite" else sa.DateTime)
    selects = []
    for joined, hits, filters in _branches(dialect, terms, subject, kinds):
        sealed: list[sa.ColumnElement] = []
        if model is not None:
            v = memory_vectors
            joined = joined.outerjoin(v, _vector_of(model))
            sealed = [v.c.subject_ref, v.c.key_generation, v.c.version, v.c.sealed]
        selects.append(
            sa.select(
                memories.c.id,
                memories.c.token_estimate,
                hits,
                *standing_columns(dialect, now_rank),
                memories.c.confidence,
                memories.c.subject_ref,
                memories.c.key_generation,
                memories.c.sealed_version,
                *sealed,
            )
            .select_from(joined)
            .where(*filters)
        )
    return _union(selects, cap)


@functools.lru_cache(maxsize=64)
def _vectors_statement(
    dialect: str, terms: bool, subject: bool, kinds: bool, cap: int, model: str
) -> sa.CompoundSelect | sa.Select:
    """The sealed vectors of the same scope, read the way the scope is."""
    v = memory_vectors
    selects = [
        sa.select(v.c.memory_id, v.c.subject_ref, v.c.key_generation, v.c.version, v.c.sealed)
        .select_from(joined.join(v, _vector_of(model)))
        .where(*filters)
        for joined, _, filters in _branches(dialect, terms, subject, kinds)
    ]
    return _union(selects, cap)


def _union(selects: list[sa.Select], cap: int) -> sa.CompoundSelect | sa.Select:
    """The branches' rows, at most ``cap`` + 1 of them (one more says "over the cap")."""
    if len(selects) == 1:
        return selects[0].limit(cap + 1)
    return sa.union_all(*selects).limit(cap + 1)


def _vector_of(model: str) -> sa.ColumnElement[bool]:
    """The join condition of a memory and its sealed vector of ``model``."""
    v = memory_vectors
    return sa.and_(v.c.tenant_id == memories.c.tenant_id, v.c.memory_id == memories.c.id, v.c.model == model)


def _branches(
    dialect: str, terms: bool, subject: bool, kinds: bool
) -> list[tuple[sa.FromClause, sa.ColumnElement, list[sa.ColumnElement[bool]]]]:
    """FROM, the hits column and WHERE of each branch of a scope of one shape: the agent's
    own memories, and, when the query has terms, the operator memories of the purpose that
    match one (``visibility.scope_branches``)."""
    tenant = sa.bindparam("tenant", type_=sa.String)
    own, operator = scope_branches(tenant, sa.bindparam("agent"), sa.bindparam("purpose"))
    common: list[sa.ColumnElement[bool]] = [
        memories.c.status == Status.ACTIVE.value,
        memories.c.expires_at > sa.bindparam("now", type_=sa.DateTime),
    ]
    if subject:
        common.append(memories.c.subject_ref == sa.bindparam("subject_ref"))
    if kinds:
        common.append(memories.c.kind.in_(sa.bindparam("kinds", expanding=True)))
    if not terms:
        return [(memories, sa.literal(0, sa.Integer), [*own, *common])]
    query_hashes = sa.bindparam("query_hashes", expanding=True)
    postings = lexical_hits(dialect, tenant, query_hashes).subquery("hits")
    own_hits = memories.outerjoin(postings, postings.c.memory_id == memories.c.id)
    # The few operator memories of the purpose (``ix_memories_authority``), each counting its
    # own postings of the query's terms (``ix_search_postings_memory``): index seeks per
    # operator memory, never a walk of the tenant's hits.
    p = search_postings
    operator_hits = (
        sa.select(sa.func.count())
        .where(p.c.tenant_id == memories.c.tenant_id, p.c.memory_id == memories.c.id)
        .where(p.c.term_hash.in_(query_hashes))
        .correlate(memories)
        .scalar_subquery()
    )
    return [
        (own_hits, sa.func.coalesce(postings.c.hits, 0), [*own, *common]),
        (memories, operator_hits, [*operator, operator_hits > 0, *common]),
    ]


def rank(
    conn: Connection,
    keyring: SubjectKeyring,
    vectors: VectorIndex,
    tenant_id: str,
    query: str,
    query_terms: list[str],
    scope: Scope,
    blend: dict[str, float] | None = None,
) -> Iterator[Ranked]:
    """The scope's memories by score, best first (see the module docstring); the relevance
    is the lexical share alone without an embedder, else the hybrid blend."""
    import numpy as np

    if not len(scope):
        return
    f64 = np.float64
    lexical = np.array(scope.hits, dtype=f64)
    if query_terms:
        lexical = lexical / len(query_terms)
    hybrid = vectors.embedder is not None
    semantic = _similarities(conn, keyring, vectors, tenant_id, query, scope) if hybrid else None
    authority, trust = np.array(scope.authority, dtype=f64), np.array(scope.trust, dtype=f64)
    confidence, recency = np.array(scope.confidence, dtype=f64), np.array(scope.recency, dtype=f64)
    w, b = WEIGHTS, blend or RELEVANCE
    relevance = (
        lexical if semantic is None else b["lexical"] * lexical + b["semantic"] * np.maximum(0.0, semantic)
    )
    standing = ((w["authority"] * authority + w["trust"] * trust) + w["confidence"] * confidence) + w[
        "recency"
    ] * recency
    total = w["lexical"] * relevance + standing
    order = np.lexsort((np.array(scope.ids), -total))
    for i in order.tolist():
        parts = score(
            float(lexical[i]),
            scope.authority[i],
            scope.trust[i],
            scope.confidence[i],
            scope.recency[i],
            None if semantic is None else float(semantic[i]),
            blend,
        )
        yield scope.ids[i], scope.tokens[i], parts


def _similarities(
    conn: Connection, keyring: SubjectKeyring, vectors: VectorIndex, tenant_id: str, query: str, scope: Scope
) -> Any:
    """Each memory's cosine with the query (all vectors are unit length), 0 where it has no
    vector that opens; one matrix product; the plaintext vectors live only in this frame
    and in the key-bound cache (``custody.opened_vectors``)."""
    import numpy as np

    out = np.zeros(len(scope), dtype=np.float64)
    assert vectors.model is not None
    wanted = list(
        zip(scope.ids, scope.subject_refs, scope.key_generations, scope.sealed_versions, strict=True)
    )
    model = vectors.model

    def read_sealed(ids: list[str]) -> Any:
        if scope.sealed is not None:  # read with the rows
            return scope.sealed
        if len(ids) <= READ_BY_ID:
            return sealed_by_id(conn, tenant_id, model, ids)
        params = {k: v for k, v in scope.params.items() if k != "now_rank"}
        return conn.execute(_vectors_statement(*scope.shape, model), params)

    opened = scope_vectors(conn, keyring, tenant_id, model, wanted, read_sealed)
    if not opened:
        return out
    q = np.frombuffer((vectors.embed([query]) or [b""])[0], dtype="<f4")
    at = [i for i, m in enumerate(scope.ids) if m in opened]
    matrix = np.frombuffer(b"".join([opened[scope.ids[i]] for i in at]), dtype="<f4").reshape(len(at), -1)
    if matrix.shape[1] != q.shape[0]:
        return out
    out[at] = (matrix @ q).astype(np.float64)
    return out
