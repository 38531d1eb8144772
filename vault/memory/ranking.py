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


def _ranked(column: sa.ColumnElement, ranks: dict) -> sa.ColumnElement:
    return sa.case(*((column == k.value, v) for k, v in ranks.items()), else_=0.0)


def rank_columns(dialect: str, query_terms: list[str], now: datetime) -> tuple[sa.ColumnElement, ...]:
    """Score in SQL: the database ranks the whole scope without shipping it to Python.

    lexical = share of query terms with a posting for the memory (an index seek per query
    term in ``search_postings`` for each memory of the scope, never a scan of text); authority and
    trust = their ranks above; recency = 2^(-age_days / 30); total = weighted blend.
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
    if dialect == "sqlite":
        age = sa.func.julianday(iso(now).replace("T", " ").rstrip("Z")) - sa.func.julianday(
            memories.c.created_at
        )
    else:
        age = sa.extract("epoch", sa.literal(to_db(now), sa.DateTime) - memories.c.created_at) / 86400.0
    age = sa.case((age < 0, 0.0), else_=age)
    recency = sa.func.exp(-math.log(2) / RECENCY_HALF_LIFE_DAYS * age)
    authority = _ranked(memories.c.authority, AUTHORITY_RANK)
    trust = _ranked(memories.c.trust, TRUST_RANK)
    total = (
        WEIGHTS["lexical"] * lexical
        + WEIGHTS["authority"] * authority
        + WEIGHTS["trust"] * trust
        + WEIGHTS["confidence"] * memories.c.confidence
        + WEIGHTS["recency"] * recency
    )
    return (
        lexical.label("lexical"),
        authority.label("authority_rank"),
        trust.label("trust_rank"),
        recency.label("recency"),
        total,
    )


def score(
    lexical: float, authority: float, trust: float, confidence: float, recency: float
) -> dict[str, float]:
    """The components of a score as the caller sees them, and their weighted total."""
    parts = {
        "lexical": lexical,
        "authority": authority,
        "trust": trust,
        "confidence": confidence,
        "recency": recency,
    }
    total = sum(WEIGHTS[k] * v for k, v in parts.items())
    return {**{k: round(v, 6) for k, v in parts.items()}, "total": round(total, 6)}
