"""One scope ranked in memory: lexical hits from the postings, with an embedder the
scope's sealed vectors opened and scored (hybrid), standing, confidence and recency from
the rows; as arrays. Scopes over the cap are ranked by SQL instead (``memory.search``).

An agent's own memories of a purpose (its scope) are read as columns once and kept by the
process (``custody.opened_vectors``) with their opened vectors as one matrix, under the
scope's change token (``store.scope_changes``): a search reads the token first and uses a
kept scope only while the token is unchanged. The token covers the scope's memories, their
vectors and postings, and the state of their subjects' keys (a key marked destroyed gives
every scope of its tenant a new token). What varies with a search is applied to the kept
columns: expiry and recency against ``now``, the subject and kinds filters, and the
postings hits of the query's terms: the scope rows of each term, read once per term (one
primary-key range in the tenant) and kept with the scope. The operator memories of the
purpose that match a term are read each time (``memory.visibility``), by the statement that
reads the token. The results a search opened from the scope's own memories are kept with
it too (``memory.kept_results``). So a search of a scope that did not change, with terms
it met before, reads no row of it and sends one statement, that one; a second reads and
opens the results no search of the scope opened before, and the operator memories'.

The cost of a search of a changed or cold scope, for n memories and t terms: one read of
the scope's rows (with their sealed vectors when none are cached), one read of the
postings of the t terms, one AEAD open per vector neither cached nor in the scope's stale
kept copy (a write costs the next search one), and an n x d matrix product.
Score dictionaries are built only for the rows the caller reads down to (the limit and
the budget): what the search returns.

The order and the scores are those of ``ranking.score`` (the same operations on the same
floats, in the same order), ties broken by memory id like the lexical search's SQL. The
statements that read a scope are ``memory.scope_statements``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy.engine import Connection

from lethe.vault.access.known_tokens import check_not_revoked
from lethe.vault.clock import to_db
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.read_fence import pending
from lethe.vault.custody.sealing import Reuse, scope_vectors, sealed_by_id
from lethe.vault.memory import scope_statements as statements
from lethe.vault.memory.kept_results import KeptResults
from lethe.vault.memory.ranking import (
    AUTHORITY_RANK,
    RECENCY_HALF_LIFE_DAYS,
    RELEVANCE,
    TRUST_RANK,
    WEIGHTS,
    score,
)
from lethe.vault.memory.scope_statements import Request
from lethe.vault.memory.vectors import VectorIndex
from lethe.vault.store import driver_reads, scope_changes

Ranked = tuple[str, int, dict[str, float]]

# Missing vectors up to this many are read by id; more, by the scope's own statement
# joined with memory_vectors (a cold scope reads its vectors with its rows in one pass).
READ_BY_ID = 64
# What a kept scope of n memories keeps of its query terms' rows at most: 64 + 4n terms and
# 1,024 + 16n row indices in all (a memory has about 8 postings), so they cost about what
# the scope's own columns do, whatever the queries; terms past it are read by each search.
KEPT_TERMS, KEPT_TERMS_PER_ROW = 64, 4
KEPT_ROWS, KEPT_ROWS_PER_ROW = 1024, 16
_AUTHORITY = {k.value: v for k, v in AUTHORITY_RANK.items()}
_TRUST = {k.value: v for k, v in TRUST_RANK.items()}
_US_PER_DAY = 86_400_000_000
_DECAY = -math.log(2) / RECENCY_HALF_LIFE_DAYS


@dataclass(frozen=True)
class Scope:
    """Memories of a scope as columns (row i across them), and their opened vectors.

    Immutable once read: a kept scope is shared by the searches of every thread."""

    ids: list[str]
    pos: dict[str, int]  # memory id -> row
    tokens: Any  # int64 token estimates
    authority: Any  # float64 ranks
    trust: Any
    confidence: Any
    created_us: Any  # int64 microseconds since the epoch, UTC
    expires_us: Any
    subject_refs: Any  # object array
    kinds: Any  # object array
    keys: list[tuple[str, int]]  # (subject_ref, key generation) of the rows' data keys
    generations: Any  # int64 key generation of each row
    versions: Any  # int64 sealed version of each row
    vectors: Any | None  # n x d float32; zeros where a row has no vector that opened
    read_at_us: int
    # term hash -> the rows with a posting of it; filled by searches, valid under the same
    # token as the rest (a dict's item set is atomic, so threads may share it).
    term_rows: dict[str, Any] = field(default_factory=dict, compare=False)
    term_rows_size: list[int] = field(default_factory=lambda: [0], compare=False)  # row indices kept
    # The opened results of its own memories, kept with it (``memory.kept_results``).
    results: KeptResults | None = field(default=None, compare=False)
    # Rows with no vector of the embedder's model (written by a process without one, not yet
    # filled in): while any is missing, the scope's recall is not all semantic.
    missing_vectors: int = field(default=0, compare=False)

    def __len__(self) -> int:
        return len(self.ids)


class Ranking(NamedTuple):
    """A search's order, best first, and the opened results kept with its scope (None when
    the scope is not kept: a search that read it for itself alone)."""

    order: Iterator[Ranked]
    kept: KeptResults | None
    every_vector: bool = True  # every memory of the scope had its vector (a search says hybrid)


def ranked(
    conn: Connection, keyring: SubjectKeyring, vectors: VectorIndex, r: Request, cap: int
) -> Ranking | None:
    """The scope's memories by score, best first (see the module docstring); None if the
    agent's own scope holds more than ``cap`` memories. The relevance is the lexical share
    alone without an embedder, else the hybrid blend."""
    tenant, agent = r.caller.tenant_id, r.caller.agent_id
    opened = keyring.opened
    scope_id = (tenant, agent, r.purpose, vectors.model, cap)
    token, operator = None, None
    folded = bool(opened.capacity and r.query_terms)
    if r.confirm_token is not None and not folded:
        check_not_revoked(conn, r.confirm_token)  # before anything is read
    if folded:  # the token with the operator rows (and the revocation): a round trip fewer
        token, operator = statements.token_and_operator_rows(conn, r)
    elif opened.capacity:
        token = scope_changes.current(conn, tenant, agent or "", r.purpose)
    scope = opened.kept_scope(scope_id, token) if token is not None else None
    # Never kept, changed since, or the clock went back: read it (and keep it if it can be).
    if not isinstance(scope, Scope) or scope.read_at_us > _microseconds(r.now):
        keep = token is not None
        # A stale copy's vectors serve the rows that did not change (once their keys' states are read).
        copy = opened.kept_copy(scope_id) if keep else None
        prior = copy.scope if copy is not None and isinstance(copy.scope, Scope) else None
        # A whole scope is kept; one nothing will keep is read as narrow as this search needs.
        whole = r._replace(subject_ref=None, kinds=()) if keep else r
        scope = _read(conn, keyring, vectors, whole, cap, prior)
        if scope is None:
            return None
        if keep:
            keys = {(tenant, ref, gen) for ref, gen in scope.keys}
            not_after = copy.expires if copy is not None else None
            opened.keep_scope(scope_id, token, scope, keys, len(scope), not_after)
    kept = scope.results if token is not None else None
    return Ranking(_rank(conn, keyring, vectors, r, scope, operator), kept, scope.missing_vectors == 0)


def _rank(
    conn: Connection,
    keyring: SubjectKeyring,
    vectors: VectorIndex,
    r: Request,
    scope: Scope,
    operator_read: list[Any] | None,
) -> Iterator[Ranked]:
    now_us = _microseconds(r.now)
    mask = scope.expires_us > now_us
    if r.subject_ref is not None:
        mask &= scope.subject_refs == r.subject_ref
    if r.kinds:
        mask &= np.isin(scope.kinds, list(r.kinds))
    rows = np.flatnonzero(mask)
    f64 = np.float64
    lexical = np.zeros(len(rows), dtype=f64)
    operator: list[Any] = []
    if r.query_terms:
        lexical = _hits(conn, r.caller.tenant_id, r.query_terms, scope)[rows] / len(r.query_terms)
        operator = statements.operator_rows(conn, r) if operator_read is None else operator_read
    own = rows.tolist()
    authority, trust = scope.authority[rows], scope.trust[rows]
    confidence, created, tokens = scope.confidence[rows], scope.created_us[rows], scope.tokens[rows]
    # The query's vector, embedded once for the scope and the operator memories alike.
    q = np.frombuffer(vectors.embed([r.query])[0], dtype="<f4") if vectors.embedder is not None else None
    semantic = None if q is None else _similarities(q, scope.vectors, rows)
    operator_ids = [o.id for o in operator]  # ranked after the own rows
    if operator:
        lexical = np.concatenate(
            [lexical, np.array([o.hits for o in operator], dtype=f64) / len(r.query_terms)]
        )
        authority = np.concatenate([authority, [_AUTHORITY.get(o.authority, 0.0) for o in operator]])
        trust = np.concatenate([trust, [_TRUST.get(o.trust, 0.0) for o in operator]])
        confidence = np.concatenate([confidence, [o.confidence for o in operator]])
        created = np.concatenate([created, _us_of([o.created_at for o in operator])])
        tokens = np.concatenate([tokens, [o.token_estimate for o in operator]])
        if q is not None:  # semantic too
            semantic = np.concatenate(
                [semantic, _operator_similarities(conn, keyring, vectors, r.caller.tenant_id, q, operator)]
            )
    if not own and not operator_ids:
        return
    age = np.maximum((now_us - created) / _US_PER_DAY, 0.0)
    recency = np.exp(_DECAY * age)
    w, b = WEIGHTS, r.blend or RELEVANCE
    relevance = (
        lexical if semantic is None else b["lexical"] * lexical + b["semantic"] * np.maximum(0.0, semantic)
    )
    standing = ((w["authority"] * authority + w["trust"] * trust) + w["confidence"] * confidence) + w[
        "recency"
    ] * recency
    total = w["lexical"] * relevance + standing

    def memory_id(i: int) -> str:
        return scope.ids[own[i]] if i < len(own) else operator_ids[i - len(own)]

    for i in _best_first(total, memory_id):
        parts = score(
            float(lexical[i]),
            float(authority[i]),
            float(trust[i]),
            float(confidence[i]),
            float(recency[i]),
            None if semantic is None else float(semantic[i]),
            r.blend,
        )
        yield memory_id(i), int(tokens[i]), parts


def _best_first(total: Any, memory_id: Callable[[int], str]) -> Iterator[int]:
    """Row indices by total, highest first, equal totals by memory id (as the SQL ranking
    orders them); lazily: a search reads a few rows of the order, and only the runs of
    equal totals it reaches are sorted by id."""
    order = np.argsort(-total, kind="stable").tolist()
    n, at = len(order), 0
    while at < n:
        end = at + 1
        while end < n and total[order[end]] == total[order[at]]:
            end += 1
        run = order[at:end]
        yield from (run if len(run) == 1 else sorted(run, key=memory_id))
        at = end


def _hits(conn: Connection, tenant_id: str, terms: list[str], scope: Scope) -> Any:
    """How many of the query's terms each row of the scope has a posting of. The rows of a
    term are read once (the tenant's postings of it, kept to the scope's rows) and kept
    with the scope, within ``KEPT_TERMS`` and ``KEPT_ROWS`` (a soft bound: two searches
    may both add the last term that fits)."""
    kept = scope.term_rows
    found = {t: kept[t] for t in terms if t in kept}
    missing = [t for t in terms if t not in found]
    if missing:
        read: dict[str, list[int]] = {t: [] for t in missing}
        pos = scope.pos
        params = {"tenant": tenant_id, "query_hashes": missing}
        for term, ids in driver_reads.rows(conn, statements.postings_statement(conn.dialect.name), params):
            read[term] = [i for m in ids.split(",") if (i := pos.get(m)) is not None]
        n, size = len(scope), scope.term_rows_size
        for t, at in read.items():
            found[t] = rows = np.array(at, dtype=np.int32)
            if (
                len(kept) < KEPT_TERMS + KEPT_TERMS_PER_ROW * n
                and size[0] + len(rows) <= KEPT_ROWS + KEPT_ROWS_PER_ROW * n
            ):
                kept[t] = rows
                size[0] += len(rows)
    hits = np.zeros(len(scope), dtype=np.float64)
    for at in found.values():
        hits[at] += 1.0  # a term's rows are distinct (one posting per memory and term)
    return hits


def _similarities(q: Any, matrix: Any | None, rows: Any) -> Any:
    """Each chosen row's cosine with the query vector ``q`` (all vectors are unit length);
    0 where it has no vector or the widths differ."""
    out = np.zeros(len(rows), dtype=np.float64)
    if matrix is None or not len(rows) or matrix.shape[1] != q.shape[0]:
        return out
    out[:] = (matrix @ q)[rows]  # the product of the whole matrix: no copy of its rows
    return out


def _read(
    conn: Connection,
    keyring: SubjectKeyring,
    vectors: VectorIndex,
    r: Request,
    cap: int,
    prior: Scope | None = None,
) -> Scope | None:
    """The agent's own active, unexpired memories of the purpose (of one subject, of some
    kinds, if given) and their opened vectors; None over ``cap``. A scope whose vectors
    neither the cache nor a ``prior`` copy of it holds (cold) is read with its sealed
    vectors in one statement."""
    opened = keyring.opened
    model = vectors.model
    tenant = r.caller.tenant_id
    warm_key = (tenant, r.caller.agent_id, r.purpose, model)
    with_sealed = model is not None and prior is None and not opened.scope_is_warm(warm_key)
    shape = (conn.dialect.name, r.subject_ref is not None, bool(r.kinds), cap)
    params = statements.bound_params(r)
    rows = conn.execute(statements.scope_statement(*shape, model if with_sealed else None), params).all()
    if len(rows) > cap:
        return None
    fenced = pending(conn, tenant)  # an erasure accepted: its subject is read no more
    if fenced:  # usually empty; by position, not by name: 0.3 ms for 3,000 rows, not 1 ms
        rows = [row for row in rows if row[7] not in fenced]  # 7: subject_ref (``scope_statements.columns``)
    columns = (
        [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(15 if with_sealed else 11)]
    )
    ids, tokens, authority, trust, created, expires, confidence, refs, gens, versions, kinds_ = columns[:11]
    keys = list(dict.fromkeys(zip(refs, gens, strict=True)))  # the rows' (subject, generation), once each
    matrix = None
    if model is not None:
        sealed = None
        if with_sealed:
            sealed = [
                (m, ref, g, v, b) for m, ref, g, v, b in zip(ids, *columns[11:], strict=True) if b is not None
            ]
            opened.note_scope(warm_key, {(tenant, ref, gen) for ref, gen in keys})

        def read_sealed(missing: list[str]) -> Any:
            if sealed is not None:  # read with the rows
                return sealed
            if len(missing) <= READ_BY_ID:
                return sealed_by_id(conn, tenant, model, missing)
            return conn.execute(statements.vectors_statement(*shape, model), params)

        wanted = list(zip(ids, refs, gens, versions, strict=True))
        reuse = None if prior is None else _reuse(prior)
        plain = scope_vectors(conn, keyring, tenant, model, wanted, read_sealed, reuse)
        matrix = _matrix(ids, plain)
    pos = {m: i for i, m in enumerate(ids)}
    return Scope(
        ids=ids,
        pos=pos,
        tokens=np.array(tokens, dtype=np.int64),
        authority=np.array([_AUTHORITY.get(a, 0.0) for a in authority], dtype=np.float64),
        trust=np.array([_TRUST.get(t, 0.0) for t in trust], dtype=np.float64),
        confidence=np.array(confidence, dtype=np.float64),
        created_us=_us_of(created),
        expires_us=_us_of(expires),
        subject_refs=np.array(_shared(refs), dtype=object),
        kinds=np.array(_shared(kinds_), dtype=object),
        keys=keys,
        generations=np.array(gens, dtype=np.int64),
        versions=np.array(versions, dtype=np.int64),
        vectors=matrix,
        read_at_us=_microseconds(r.now),
        results=KeptResults(pos),
        missing_vectors=_missing(len(ids), matrix) if model is not None else 0,
    )


def _missing(n: int, matrix: Any | None) -> int:
    """Rows with no opened vector: all of them without a matrix, else the all-zero rows."""
    return n if matrix is None else int((~matrix.any(axis=1)).sum())


def _reuse(prior: Scope) -> Reuse:
    """The vector ``prior`` holds for a memory, if it is of the same version under the same
    key (what its AAD bound when it was opened); None otherwise, or if none opened. The
    columns become Python lists once, so each row costs a few list reads (numpy scalars per
    row made a 3,000-row scope take 20 ms)."""
    if prior.vectors is None:
        return lambda memory_id, ref, gen, version: None
    matrix = prior.vectors.astype("<f4", copy=False)  # as opened: little-endian float32
    held = list(
        zip(
            prior.subject_refs.tolist(),
            prior.generations.tolist(),
            prior.versions.tolist(),
            matrix.any(axis=1).tolist(),  # all zeros: no vector opened for the row
            strict=True,
        )
    )
    pos = prior.pos

    def vector(memory_id: str, ref: str, gen: int, version: int) -> bytes | None:
        i = pos.get(memory_id)
        return matrix[i].tobytes() if i is not None and held[i] == (ref, gen, version, True) else None

    return vector


def _matrix(ids: list[str], plain: dict[str, bytes]) -> Any | None:
    """The opened vectors as rows of one float32 matrix (zeros where none opened)."""
    if not plain:
        return None
    width = len(next(iter(plain.values()))) // 4
    matrix = np.zeros((len(ids), width), dtype=np.float32)
    at = [i for i, m in enumerate(ids) if m in plain and len(plain[m]) == width * 4]
    if at:
        blob = b"".join([plain[ids[i]] for i in at])
        matrix[at] = np.frombuffer(blob, dtype="<f4").reshape(len(at), width)
    return matrix


def _operator_similarities(
    conn: Connection, keyring: SubjectKeyring, vectors: VectorIndex, tenant_id: str, q: Any, rows: list[Any]
) -> Any:
    """The cosine of each matching operator memory with the query vector (0 where none opens)."""
    assert vectors.model is not None
    wanted = [(o.id, o.subject_ref, o.key_generation, o.sealed_version) for o in rows]
    plain = scope_vectors(conn, keyring, tenant_id, vectors.model, wanted)
    return _similarities(q, _matrix([o.id for o in rows], plain), np.arange(len(rows)))


def _shared(values: list[str]) -> list[str]:
    """The values with one string object per distinct value: a kept scope's rows name a handful
    of subjects and kinds, and the driver makes a new string for every row (about 160 bytes a
    row of a kept scope, or 6 MiB of a worker's 40,000 by default)."""
    one: dict[str, str] = {}
    return [one.setdefault(v, v) for v in values]


def _microseconds(t: datetime) -> int:
    """A time as microseconds since the epoch, UTC (as the columns store it)."""
    return int(np.datetime64(to_db(t), "us").astype(np.int64))


def _us_of(values: list[Any]) -> Any:
    """Times read as ISO text (``scope_statements``) or as datetimes, as int64 microseconds."""
    return np.array(values, dtype="datetime64[us]").astype(np.int64)
