"""The read fence: from the acceptance of an erasure request, agents read nothing of the subject.

The write fence (a ``forgotten_subjects`` row, ``keyring.WRITABLE_COLUMNS``) goes up in the
transaction that accepts a request; the same row fences reads, from its commit, on every
node: it lives in the database and every read that returns memories to agents asks it.

- A scope read for ranking (``memory.ranked_scope``) and the SQL ranking of a large scope
  (``memory.search``) drop the rows of ``pending(conn, tenant)``: the tenant's subjects
  whose erasure was accepted and not yet tombstoned (``generation`` 0; a tombstoned
  subject's memories are ``forgotten`` and leave every read by their status). One indexed
  statement when a scope is read, not a probe per row: a probe per row cost a 3,000-memory
  scope read 30 % on SQLite, and PostgreSQL, with fresh statistics, planned it as a nested
  loop over the tenant's fenced subjects (8 ms became 200 ms).
- The read by id that serves ``GET /v1/memories/{id}`` and opens a search's results
  (``memory.repository.by_ids_with_keys``) reads ``FENCED`` beside each row (a primary-key
  probe per row returned, in the same statement) and drops the fenced ones.
- A process keeps scopes, opened vectors and results under the scope's change token
  (``store.scope_changes``); the acceptance gives every scope of the tenant a new one
  (``store.projection``), so a search on any node reads the scope again, fence applied.

The row stays until a reinstatement deletes it (which gives the scopes new tokens too):
whatever holds exist (a hold is a duty to keep the data, not permission to keep using it)
and while the request is paused.

Exceptions: none of its own (a database error propagates).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.store.tables import forgotten_subjects, memories

_PENDING = sa.select(forgotten_subjects.c.subject_ref).where(
    forgotten_subjects.c.tenant_id == sa.bindparam("fence_tenant"),
    forgotten_subjects.c.generation == 0,
)

# Beside a ``memories`` row: whether its subject is fenced (any generation).
FENCED = (
    sa.exists()
    .where(
        forgotten_subjects.c.tenant_id == memories.c.tenant_id,
        forgotten_subjects.c.subject_ref == memories.c.subject_ref,
    )
    .label("fenced")
)


def pending(conn: Connection, tenant_id: str) -> frozenset[str]:
    """The subject refs of the tenant whose erasure is accepted and not yet tombstoned."""
    return frozenset(conn.execute(_PENDING, {"fence_tenant": tenant_id}).scalars())
