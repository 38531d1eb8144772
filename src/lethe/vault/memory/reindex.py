"""Rebuild the derived search index from the log and the keys: notes are truth, indexes are disposable.

The search index holds, for each memory that can still be retrieved or reviewed
(``active`` or ``quarantined``, ciphertext held, key alive), the keyed hashes of its
words; a memory that leaves those states for good (superseded, expired, retracted,
forgotten) leaves the index in the same transaction (``store.projection``). So the index
is a pure function of the replayed projection, the subject keys and the pepper, and of
its *recipe* (tokeniser and term-hash function, each versioned): ``rebuild`` recomputes
it and records the recipe in ``index_recipes``; ``IndexCheck`` lets ``replay --check``
compare the live index with the one the log would give.

With an embedder configured (``memory.embedding``), a rebuild also embeds every indexed
memory again and seals its vector under the subject's key (``memory.vectors``), and records
the embedder's model id and width beside the recipe: change the model setting, run
``lethe reindex``, and every vector is of the new model.

A rebuild runs in one write transaction: writers wait for it, none lands half-indexed,
and a failure leaves the old index whole. Contents are opened in memory only, a page at a
time, and never logged.

Exceptions: ``StoreUnavailable`` (503) from the unit of work or the KMS; nothing of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import iso, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import (
    TERM_HASH,
    TERM_HASH_VERSION,
    TOKENISER,
    TOKENISER_VERSION,
    Pseudonymizer,
)
from lethe.vault.custody.sealing import Opened, open_rows, subject_deks
from lethe.vault.memory import repository as repo
from lethe.vault.memory.vectors import VectorIndex
from lethe.vault.model import Status
from lethe.vault.store import scope_changes
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import index_recipes, memories, search_index
from lethe.vault.store.tenancy import maintenance_job

SEARCH_INDEX = "search_index"
INDEXED = (Status.ACTIVE.value, Status.QUARANTINED.value)
PAGE = 500


@dataclass(frozen=True)
class IndexRecipe:
    """How an index is built: what a query's terms must be hashed with to match it."""

    tokeniser: str
    tokeniser_version: int
    term_hash: str
    term_hash_version: int


CURRENT_RECIPE = IndexRecipe(TOKENISER, TOKENISER_VERSION, TERM_HASH, TERM_HASH_VERSION)


@dataclass(frozen=True)
class ReindexReport:
    entries: int  # index rows written
    unreadable: int  # indexed-state memories whose ciphertext did not open (key gone): left out
    recipe: IndexRecipe
    built_at: str
    vectors: int = 0  # sealed vectors written (0 without an embedder)
    embedding_model: str | None = None  # the embedder's model id (name@version/dims), if any
    embedding_dims: int | None = None


def expected_entries(
    rows_from: Connection,
    keys_from: Connection,
    keyring: SubjectKeyring,
    pseudonyms: Pseudonymizer,
    vectors: VectorIndex | None = None,
    vector_rows: list[dict[str, object]] | None = None,
) -> Iterator[tuple[list[dict[str, str]], int]]:
    """The index rows the projection in ``rows_from`` and the keys in ``keys_from`` give, a page
    at a time, each with the count of memories on the page that did not open. Given an
    embedder (``vectors``), each page's memories are embedded again and their sealed vectors
    put in ``vector_rows`` (the caller writes and clears them page by page)."""
    after: tuple[str, str] = ("", "")
    cols = [memories.c[n] for n in ("id", "tenant_id", "subject_ref", "key_generation", "sealed_version")]
    while True:
        page = rows_from.execute(
            sa.select(*cols, memories.c.ciphertext)
            .where(
                memories.c.status.in_(INDEXED),
                memories.c.ciphertext.is_not(None),
                sa.tuple_(memories.c.tenant_id, memories.c.id) > sa.tuple_(*after),
            )
            .order_by(memories.c.tenant_id, memories.c.id)
            .limit(PAGE)
        ).all()
        if not page:
            return
        opened = open_rows(keys_from, keyring, page)
        rows = [
            repo.index_row(r.tenant_id, r.subject_ref, r.id, _terms(pseudonyms, r.tenant_id, o))
            for r in page
            if (o := opened.get((r.tenant_id, r.id))) is not None
        ]
        if vectors is not None and vectors.model is not None and vector_rows is not None:
            vector_rows.extend(_sealed_vectors(keys_from, keyring, vectors, page, opened))
        yield rows, len(page) - len(rows)
        after = (page[-1].tenant_id, page[-1].id)


def _terms(pseudonyms: Pseudonymizer, tenant_id: str, opened: Opened) -> set[str]:
    """A memory's postings as its write made them: its words and its sealed ``source_ref``
    (``MemoryService._index_row``; a memory written before origins were sealed has none)."""
    terms = pseudonyms.term_hashes(tenant_id, opened.content)
    if source_ref := opened.origin.get("source_ref"):
        terms.add(pseudonyms.source_hash(tenant_id, source_ref))
    return terms


def _sealed_vectors(
    conn: Connection, keyring: SubjectKeyring, vectors: VectorIndex, page: list, opened: dict
) -> list[dict[str, object]]:
    """The page's opened memories embedded in one batch and sealed under their subjects' keys."""
    live = [r for r in page if (r.tenant_id, r.id) in opened]
    deks = subject_deks(conn, keyring, {(r.tenant_id, r.subject_ref, r.key_generation) for r in live})
    embedded = vectors.embed([opened[(r.tenant_id, r.id)][1] for r in live]) or []
    out = []
    for r, vector in zip(live, embedded, strict=True):
        dek = deks.get((r.tenant_id, r.subject_ref, r.key_generation))
        if dek is not None:
            out.append(
                vectors.row(dek, r.tenant_id, r.subject_ref, r.id, r.sealed_version, r.key_generation, vector)
            )
    return out


def recorded_recipe(conn: Connection, name: str = SEARCH_INDEX) -> IndexRecipe | None:
    row = conn.execute(sa.select(index_recipes).where(index_recipes.c.name == name)).first()
    if row is None:
        return None
    return IndexRecipe(row.tokeniser, row.tokeniser_version, row.term_hash, row.term_hash_version)


class Reindexer:
    """Rebuilds the search index and records its recipe (see the module docstring).

    Exceptions: ``StoreUnavailable`` (503).
    """

    def __init__(
        self,
        uow: UnitOfWork,
        keyring: SubjectKeyring,
        pseudonyms: Pseudonymizer,
        clock: Callable[[], datetime] = utcnow,
        vectors: VectorIndex | None = None,
    ) -> None:
        self.uow = uow
        self.keyring = keyring
        self.pseudonyms = pseudonyms
        self.clock = clock
        self.vectors = vectors or VectorIndex(None)

    @maintenance_job("reindex")
    def rebuild(self) -> ReindexReport:
        """Drop every index entry and write them again from the projection and the keys; with
        an embedder, every indexed memory is embedded again and its vector sealed anew."""
        entries = unreadable = written = 0
        v = self.vectors
        with self.uow.write() as conn:
            repo.drop_all_index_entries(conn)
            scope_changes.everything_changed(conn, str(uuid.uuid4()))  # kept scopes hold old vectors
            vector_rows: list[dict[str, object]] = []
            for rows, missed in expected_entries(conn, conn, self.keyring, self.pseudonyms, v, vector_rows):
                repo.add_index_rows(conn, rows)
                repo.add_vectors(conn, vector_rows)
                entries += len(rows)
                unreadable += missed
                written += len(vector_rows)
                vector_rows.clear()
            dims = v.embedder.dims if v.embedder is not None else None
            built_at = iso(self.clock())
            conn.execute(index_recipes.delete().where(index_recipes.c.name == SEARCH_INDEX))
            conn.execute(
                index_recipes.insert().values(
                    name=SEARCH_INDEX,
                    tokeniser=CURRENT_RECIPE.tokeniser,
                    tokeniser_version=CURRENT_RECIPE.tokeniser_version,
                    term_hash=CURRENT_RECIPE.term_hash,
                    term_hash_version=CURRENT_RECIPE.term_hash_version,
                    entries=entries,
                    built_at=built_at,
                    embedding_model=v.model,
                    embedding_dims=dims,
                )
            )
        return ReindexReport(entries, unreadable, CURRENT_RECIPE, built_at, written, v.model, dims)

    @maintenance_job("reindex")
    def recipe(self) -> IndexRecipe | None:
        with self.uow.read() as conn:
            return recorded_recipe(conn)

    @maintenance_job("reindex")
    def check(self) -> IndexCheck:
        return IndexCheck(self.keyring, self.pseudonyms)


@dataclass(frozen=True)
class IndexCheck:
    """``replay.check``'s hook: the differences between the live index and the one the
    replayed projection (``replayed``) and the live keys give, and a stale recipe."""

    keyring: SubjectKeyring
    pseudonyms: Pseudonymizer

    def differences(self, replayed: Connection, live: Connection) -> list[str]:
        out = []
        recipe = recorded_recipe(live)
        if recipe != CURRENT_RECIPE:
            out.append(
                f"{SEARCH_INDEX} recipe: the store records {recipe}, this release builds "
                f"{CURRENT_RECIPE}; run `lethe reindex`"
            )
        want = {
            (r["tenant_id"], r["memory_id"]): (r["subject_ref"], r["terms"])
            for rows, _ in expected_entries(replayed, live, self.keyring, self.pseudonyms)
            for r in rows
        }
        have = {
            (r.tenant_id, r.memory_id): (r.subject_ref, r.terms)
            for r in live.execute(sa.select(search_index))
        }
        for key in sorted(set(want) | set(have)):
            if key not in have:
                out.append(f"{SEARCH_INDEX} {key}: only in the rebuilt index")
            elif key not in want:
                out.append(f"{SEARCH_INDEX} {key}: only in the live index")
            elif want[key] != have[key]:
                out.append(f"{SEARCH_INDEX} {key}: terms differ")
        return out
