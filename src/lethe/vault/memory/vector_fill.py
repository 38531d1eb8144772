"""Vectors filled in: every retrievable memory gets its sealed vector of the configured model.

A process without an embedder (the semantic extra not installed, ``LETHE_EMBEDDING_MODEL=none``,
an agent's ``lethe mcp`` in its own virtualenv) writes a memory with no ``memory_vectors``
row; a model change, or an update written without an embedder, leaves a row of another model
or of an older version. That missing row is the marker: a server with an embedder finds
such memories (indexed, ciphertext held, no vector of its model for their sealed version) and
embeds them, a page per run, in the background (``api.http.background``), as ``lethe
reindex`` would but without holding writers for the whole store. A search of a scope with
one of them missing says ``lexical`` until it is filled (``memory.ranked_scope``).

The page is read and opened in one read transaction, embedded with no transaction open
(a model is slow), and written in a write transaction that first reads which of the page's
memories are still at the version it embedded and still without a vector, so a memory
updated or forgotten meanwhile is never given a stale vector; the scopes of the memories
filled take a new change token, so processes that keep a scope read it again.

Exceptions: ``StoreUnavailable`` (503) from the unit of work or the KMS; nothing of its own.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import sqlalchemy as sa

from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.sealing import open_rows, subject_deks
from lethe.vault.memory.vectors import VectorIndex
from lethe.vault.model import Status
from lethe.vault.store import scope_changes
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import memories, memory_vectors
from lethe.vault.store.tenancy import maintenance_job

INDEXED = (Status.ACTIVE.value, Status.QUARANTINED.value)
PAGE = 200  # memories embedded per run: ~1 s of the default model on one core


def _without_vector(model: str) -> Any:
    """Retrievable memories with no vector of ``model`` for their sealed version."""
    has = (
        sa.select(memory_vectors.c.memory_id)
        .where(
            memory_vectors.c.tenant_id == memories.c.tenant_id,
            memory_vectors.c.memory_id == memories.c.id,
            memory_vectors.c.model == model,
            memory_vectors.c.version == memories.c.sealed_version,
        )
        .exists()
    )
    return sa.and_(memories.c.status.in_(INDEXED), memories.c.ciphertext.is_not(None), ~has)


class VectorFill:
    """Finds the memories without a vector of this process's model and embeds them."""

    def __init__(self, uow: UnitOfWork, keyring: SubjectKeyring, vectors: VectorIndex) -> None:
        self.uow = uow
        self.keyring = keyring
        self.vectors = vectors
        self.remaining: int | None = None  # as last counted by this process (None: not yet)
        self.counted_at = 0.0  # when (``time.monotonic``)

    @maintenance_job("vector fill")
    def missing(self) -> int:
        """How many memories, across tenants, have no vector of the model (0 without one)."""
        if self.vectors.model is None:
            return 0
        with self.uow.read() as conn:
            q = sa.select(sa.func.count()).select_from(memories).where(_without_vector(self.vectors.model))
            self.remaining = int(conn.execute(q).scalar_one())
        self.counted_at = time.monotonic()
        return self.remaining

    @maintenance_job("vector fill")
    def fill_page(self) -> int:
        """Embed and seal up to ``PAGE`` memories without a vector; how many were written."""
        model = self.vectors.model
        if model is None:
            return 0
        cols = [memories.c[n] for n in ("id", "tenant_id", "subject_ref", "key_generation", "sealed_version")]
        with self.uow.read() as conn:
            page = conn.execute(
                sa.select(*cols, memories.c.ciphertext).where(_without_vector(model)).limit(PAGE)
            ).all()
            opened = open_rows(conn, self.keyring, page)
            live = [r for r in page if (r.tenant_id, r.id) in opened]
            deks = subject_deks(
                conn, self.keyring, {(r.tenant_id, r.subject_ref, r.key_generation) for r in live}
            )
        embedded = self.vectors.embed([opened[(r.tenant_id, r.id)][1] for r in live]) or []
        rows = [
            self.vectors.row(dek, r.tenant_id, r.subject_ref, r.id, r.sealed_version, r.key_generation, v)
            for r, v in zip(live, embedded, strict=True)
            if (dek := deks.get((r.tenant_id, r.subject_ref, r.key_generation))) is not None
        ]
        if rows:
            self._write(rows, model)
        if len(page) < PAGE or self.remaining is None:
            self.missing()  # the last page (or none counted yet): count what is left
        else:  # a full page: more remain, and a count over every memory per page would cost
            # as much as the page itself on a large store
            self.remaining = max(self.remaining - len(rows), 1)
            self.counted_at = time.monotonic()
        return len(rows)

    def _write(self, rows: list[dict[str, object]], model: str) -> None:
        """Store the rows whose memory is still at the embedded version and still without a
        vector (a write or a forget may have come in between), replacing any stale one."""
        with self.uow.write() as conn:
            keys = [(str(r["tenant_id"]), str(r["memory_id"])) for r in rows]
            still = {
                (t, m, v)
                for t, m, v in conn.execute(
                    sa.select(memories.c.tenant_id, memories.c.id, memories.c.sealed_version).where(
                        sa.tuple_(memories.c.tenant_id, memories.c.id).in_(keys), _without_vector(model)
                    )
                )
            }
            fresh = [r for r in rows if (r["tenant_id"], r["memory_id"], r["version"]) in still]
            if not fresh:
                return
            stale = [(str(r["tenant_id"]), str(r["memory_id"])) for r in fresh]
            conn.execute(
                memory_vectors.delete().where(
                    sa.tuple_(memory_vectors.c.tenant_id, memory_vectors.c.memory_id).in_(stale)
                )
            )
            conn.execute(memory_vectors.insert(), fresh)
            token = str(uuid.uuid4())
            for tenant_id, memory_id in stale:
                scope_changes.memory_changed(conn, tenant_id, memory_id, token)
