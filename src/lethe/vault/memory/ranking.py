"""How a search ranks what the caller may read: relevance, then who vouches for it.

The score blends lexical relevance with the memory's *standing* (its authority and trust,
which the policy table and review set; the content never assigns them), the confidence
the writer claimed, and recency. Confidence is a claim of the writer, so it weighs
little: a verified operator fact must outrank a contradicting agent inference of equal
relevance however confident and recent the inference is. The weights keep that true at
the extremes: the authority gap between an operator and an agent (``1 - 0.4``) times its
weight (0.35) exceeds the most that confidence and recency together can add (0.075 + 0.075).
Relevance still leads: an operator fact matching half of a query's terms loses to an
agent memory matching all of them.

In a hybrid search (an embedder is configured and the scope's sealed vectors opened),
relevance is a blend of the lexical share and the semantic similarity (the query's
cosine with the memory's vector, floored at 0): ``RELEVANCE`` weighs them; the blend
then takes the lexical slot of ``WEIGHTS``, so standing, confidence and recency weigh
exactly as in a lexical search. A weighted blend of scores (not rank fusion) keeps
"matches every term" meaningful. On the golden recall set (``lethe bench``) 0.5/0.5 gave
hybrid recall@5 0.924 (MRR 0.77) and 0.3/0.7 gave 0.933 (MRR 0.82), exact-term queries at
1.0 both ways; more semantic weight helps that set a little more, but exact lookups of
names and identifiers are what the lexical share is for, so it stays at 0.3.
"""

from __future__ import annotations

import math
from datetime import datetime

import sqlalchemy as sa

from lethe.vault.clock import iso, to_db
from lethe.vault.model import Authority, Trust
from lethe.vault.store.tables import memories, search_postings

WEIGHTS = {"lexical": 0.45, "authority": 0.35, "trust": 0.05, "confidence": 0.075, "recency": 0.075}
AUTHORITY_RANK = {
    Authority.OPERATOR: 1.0,
    Authority.USER: 0.75,
    Authority.AGENT: 0.4,
    Authority.EXTERNAL: 0.25,
}
TRUST_RANK = {Trust.VERIFIED: 1.0, Trust.TRUSTED: 0.75, Trust.UNTRUSTED: 0.25}
RECENCY_HALF_LIFE_DAYS = 30.0
RELEVANCE = {"lexical": 0.3, "semantic": 0.7}  # hybrid relevance (see the module docstring)


def _ranked(column: sa.ColumnElement, ranks: dict) -> sa.ColumnElement:
    return sa.case(*((column == k.value, v) for k, v in ranks.items()), else_=0.0)


def rank_time(dialect: str, now: datetime) -> str | datetime:
    """``now`` as ``standing_columns`` compares it with ``created_at`` in this dialect."""
    return iso(now).replace("T", " ").rstrip("Z") if dialect == "sqlite" else to_db(now)


def standing_columns(dialect: str, now: datetime | sa.BindParameter) -> tuple[sa.ColumnElement, ...]:
    """authority and trust = their ranks above; recency = 2^(-age_days / 30); labelled.
    ``now`` is a time, or a bound parameter that takes ``rank_time`` (a cached statement)."""
    if isinstance(now, datetime):
        now = sa.literal(rank_time(dialect, now), sa.String if dialect == "sqlite" else sa.DateTime)
    if dialect == "sqlite":
        age = sa.func.julianday(now) - sa.func.julianday(memories.c.created_at)
    else:
        age = sa.extract("epoch", now - memories.c.created_at) / 86400.0
    age = sa.case((age < 0, 0.0), else_=age)
    recency = sa.func.exp(-math.log(2) / RECENCY_HALF_LIFE_DAYS * age)
    authority = _ranked(memories.c.authority, AUTHORITY_RANK)
    trust = _ranked(memories.c.trust, TRUST_RANK)
    return authority.label("authority_rank"), trust.label("trust_rank"), recency.label("recency")


def rank_columns(dialect: str, query_terms: list[str], now: datetime) -> tuple[sa.ColumnElement, ...]:
    """Score in SQL: the database ranks the whole scope without shipping it to Python (the
    lexical search; a scope under the cap is ranked in memory, ``memory.ranked_scope``).

    lexical = share of query terms with a posting for the memory (an index seek per query
    term in ``search_postings`` for each memory of the scope, never a scan of text); the
    standing columns as ``standing_columns``; total = weighted blend.
    Returns the labelled components and the total.
    """
    if query_terms:
        hits = (
            sa.select(sa.func.count())
            .where(
                search_postings.c.tenant_id == memories.c.tenant_id,
                search_postings.c.memory_id == memories.c.id,
                search_postings.c.term_hash.in_(query_terms),
            )
            .correlate(memories)
            .scalar_subquery()
        )
        lexical = sa.cast(hits, sa.Float) / len(query_terms)
    else:
        lexical = sa.literal(0.0, sa.Float)
    authority, trust, recency = standing_columns(dialect, now)
    total = (
        WEIGHTS["lexical"] * lexical
        + WEIGHTS["authority"] * authority.element
        + WEIGHTS["trust"] * trust.element
        + WEIGHTS["confidence"] * memories.c.confidence
        + WEIGHTS["recency"] * recency.element
    )
    return lexical.label("lexical"), authority, trust, recency, total


def relevance(lexical: float, semantic: float | None, blend: dict[str, float] | None = None) -> float:
    """Lexical share alone, or the hybrid blend (``RELEVANCE`` unless ``blend`` is given:
    the bench ranks semantic-only with it) when the memory's vector was scored."""
    if semantic is None:
        return lexical
    w = blend or RELEVANCE
    return w["lexical"] * lexical + w["semantic"] * max(0.0, semantic)


def score(
    lexical: float,
    authority: float,
    trust: float,
    confidence: float,
    recency: float,
    semantic: float | None = None,
    blend: dict[str, float] | None = None,
) -> dict[str, float]:
    """The components of a score as the caller sees them, and their weighted total
    (``semantic`` only in a hybrid search: it then shares the relevance weight)."""
    parts = {
        "lexical": lexical,
        "authority": authority,
        "trust": trust,
        "confidence": confidence,
        "recency": recency,
    }
    total = WEIGHTS["lexical"] * relevance(lexical, semantic, blend) + sum(
        WEIGHTS[k] * v for k, v in parts.items() if k != "lexical"
    )
    out = {k: round(v, 6) for k, v in parts.items()}
    if semantic is not None:
        out["semantic"] = round(max(0.0, semantic), 6)
    return {**out, "total": round(total, 6)}
