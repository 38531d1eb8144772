"""Semantic recall with sealed vectors (issue 16, items 2, 3 and 5), SQLite and PostgreSQL.

Each memory's embedding is stored only as AES-256-GCM ciphertext under its subject's data
key, bound to tenant, subject, memory, version and model; search opens the vectors of the
caller's scope and blends their similarity with lexical relevance. Forgetting removes the
vectors with the index (counted in the certificate's evidence), a vector cannot be opened
once the key is destroyed, the compaction's byte scan looks for them, and no plaintext
vector is ever in the data directory. ``lethe reindex`` embeds again and records the model.
"""

from __future__ import annotations

from types import SimpleNamespace

import pydantic
import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import build
from lethe.api.settings import Settings
from lethe.keys.filescan import find_in_files
from lethe.vault.custody.sealing import open_vectors
from lethe.vault.erasure.compaction_disk import sqlite_files
from lethe.vault.memory import embedding, search
from lethe.vault.model import Provenance, SearchQuery, SourceType
from lethe.vault.store.tables import index_recipes, memory_vectors
from tests.conftest import agent, officer, write_cmd

TEA = "Alice prefers green tea in the morning"
OTHERS = (
    "Alice works as a nurse at the hospital",
    "Alice plays the violin in a band",
    "Alice drives a red Volvo",
)


def populate(c) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {text: c.memories.write(agent(), write_cmd(text)).item.id for text in (TEA, *OTHERS)}


def vector_rows(c) -> list:  # type: ignore[no-untyped-def]
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return conn.execute(sa.select(memory_vectors)).all()


def found(c, query: str, **kw) -> list[str]:  # type: ignore[no-untyped-def]
    r = c.search.search(agent(), SearchQuery(query=query, purpose="support", **kw))
    return [i.content for i in r.items]


def test_search_finds_by_meaning_what_lexical_search_cannot(lethe):
    populate(lethe)
    query = "what does she like to drink"
    assert (
        set(lethe.pseudonyms.term_hashes("t1", query)) & set(lethe.pseudonyms.term_hashes("t1", TEA)) == set()
    )
    result = lethe.search.search(agent(), SearchQuery(query=query, purpose="support", limit=1))
    assert result.recall == "hybrid" and [i.content for i in result.items] == [TEA]
    assert result.items[0].score["semantic"] > 0


def test_every_memory_has_one_sealed_vector_of_the_configured_model(lethe):
    ids = populate(lethe)
    rows = vector_rows(lethe)
    model = lethe.search.vectors.model
    assert {r.memory_id for r in rows} == set(ids.values()) and {r.model for r in rows} == {model}
    dims = lethe.search.vectors.embedder.dims
    assert all(len(r.sealed) == 1 + 12 + 4 * dims + 16 for r in rows)  # format, nonce, body, tag


def test_no_plaintext_vector_is_in_the_store(lethe, backend):
    populate(lethe)
    plain = lethe.search.vectors.embed([TEA, *OTHERS])
    rows = vector_rows(lethe)
    assert not any(p[:64] in r.sealed for p in plain for r in rows)
    if backend == "sqlite":  # the database file and WAL, scanned by a child process
        hits = find_in_files(sqlite_files(lethe.uow.engine), [p[i : i + 32] for p in plain for i in (0, 512)])
        assert all(found == [] for found in hits.values()), hits


def test_a_sealed_vector_opens_only_for_its_memory_version_and_model(lethe):
    populate(lethe)
    rows = [SimpleNamespace(**r._mapping) for r in vector_rows(lethe)]
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        assert len(open_vectors(conn, lethe.keyring, rows)) == len(rows)
        a, b = rows[0], rows[1]
        moved = [SimpleNamespace(**{**vars(a), "memory_id": b.memory_id})]
        older = [SimpleNamespace(**{**vars(a), "version": a.version + 1})]
        other_model = [SimpleNamespace(**{**vars(a), "model": "another-model@1/256"})]
        for tampered in (moved, older, other_model):
            assert open_vectors(conn, lethe.keyring, tampered) == {}


def test_a_vector_cannot_be_opened_after_its_subjects_key_is_destroyed(lethe):
    populate(lethe)
    rows = vector_rows(lethe)  # a copy, as a backup or a stolen disk would hold
    job = lethe.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    lethe.erasure.run_pending()
    assert lethe.erasure.get(officer(), job.id).completed_at is not None
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        assert open_vectors(conn, lethe.keyring, rows) == {}


def test_forget_removes_the_vectors_and_the_evidence_counts_them(lethe, backend):
    populate(lethe)
    bob = lethe.memories.write(agent(), write_cmd("Bob drinks black coffee", subject="bob@example.com")).item
    job = lethe.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    lethe.erasure.run_pending()
    steps = {s.step: s.evidence for s in lethe.erasure.get(officer(), job.id).steps}
    assert steps["tombstoned"]["sealed_vectors_before"] == 4
    assert steps["tombstoned"]["sealed_vectors_after"] == 0
    assert steps["derived_purged"]["sealed_vectors_after"] == 0
    assert steps["verified"]["sealed_vectors"] == 0
    scan = steps["compacted"]["vector_scan"]
    assert scan["performed"] and scan["sealed_vectors"] == 4
    if backend == "sqlite":
        assert scan["slices_found"] == 0 and scan["ciphertexts_scanned"] == 4 and scan["slices"] == 12
    assert [r.memory_id for r in vector_rows(lethe)] == [bob.id]


def test_a_summary_built_from_a_forgotten_memory_loses_its_vector_in_derived_purged(lethe):
    ids = populate(lethe)
    prov = Provenance(SourceType.SUMMARY, "summary", sources=(ids[TEA],))
    summary = lethe.memories.write(
        agent(),
        write_cmd(
            "Carol's team notes a tea preference", subject="carol", kind="task_summary", provenance=prov
        ),
    ).item
    job = lethe.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    lethe.erasure.run_pending()
    steps = {s.step: s.evidence for s in lethe.erasure.get(officer(), job.id).steps}
    assert steps["derived_purged"]["derived_ids"] == [summary.id]
    assert steps["derived_purged"]["sealed_vectors_purged"] == 1
    assert vector_rows(lethe) == []


def test_reindex_embeds_every_memory_again_and_records_the_model(lethe):
    populate(lethe)
    with lethe.uow.maintenance("test: alter rows as their owner"), lethe.uow.write() as conn:
        conn.execute(memory_vectors.delete())
    assert (
        lethe.search.search(agent(), SearchQuery(query="tea", purpose="support")).items[0].score["semantic"]
        == 0
    )
    report = lethe.reindex.rebuild()
    v = lethe.search.vectors
    assert (
        report.vectors == 4 and report.embedding_model == v.model and report.embedding_dims == v.embedder.dims
    )
    with lethe.uow.read() as conn:
        row = conn.execute(sa.select(index_recipes).where(index_recipes.c.name == "search_index")).one()
    assert (row.embedding_model, row.embedding_dims) == (v.model, v.embedder.dims)
    assert len(vector_rows(lethe)) == 4
    assert found(lethe, "what does she like to drink", limit=1) == [TEA]


def test_a_scope_larger_than_the_cap_is_ranked_lexically_and_says_so(lethe, monkeypatch):
    populate(lethe)
    monkeypatch.setattr(search, "MAX_RANKED_IN_MEMORY", 3)
    result = lethe.search.search(agent(), SearchQuery(query="green tea", purpose="support"))
    assert result.recall == "lexical" and result.items[0].content == TEA
    assert "semantic" not in result.items[0].score


def test_without_an_embedder_search_is_lexical_and_says_why(settings):
    c = build(settings.model_copy(update={"embedding_model": "none"}), create=True)
    try:
        assert "lexical only" in c.semantic
        c.memories.write(agent(), write_cmd(TEA))
        assert vector_rows(c) == []
        assert c.search.search(agent(), SearchQuery(query="green tea", purpose="support")).recall == "lexical"
    finally:
        c.close()


def test_a_missing_semantic_extra_leaves_search_lexical_with_a_clear_message(monkeypatch):
    import sys

    embedding.load_embedder.cache_clear()
    monkeypatch.setitem(sys.modules, "wordllama", None)
    monkeypatch.delitem(sys.modules, "lethe.vault.memory.wordllama_embedder", raising=False)
    try:
        choice = embedding.load_embedder(embedding.DEFAULT_MODEL)
        assert choice.embedder is None and "install the semantic extra" in choice.status
    finally:
        embedding.load_embedder.cache_clear()


def test_an_unknown_embedding_model_is_a_settings_error(tmp_path):
    with pytest.raises(pydantic.ValidationError, match="unknown embedding model"):
        Settings(data_dir=tmp_path, embedding_model="bert-from-the-hub")


def _subject_keys(c) -> list:  # type: ignore[no-untyped-def]
    from lethe.vault.store.tables import subject_keys

    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return conn.execute(sa.select(subject_keys)).all()


def _scores(c, query: str) -> list[tuple[str, dict[str, float]]]:  # type: ignore[no-untyped-def]
    r = c.search.search(agent(), SearchQuery(query=query, purpose="support"))
    return [(i.id, {k: v for k, v in i.score.items() if k not in ("recency", "total")}) for i in r.items]


def test_searches_served_from_opened_vectors_rank_as_searches_that_open_every_vector(lethe, settings):
    populate(lethe)
    cold = build(settings.model_copy(update={"vector_cache_entries": 0}))
    try:
        first = _scores(lethe, "what does she like to drink")
        assert lethe.keyring.opened.held == 4  # the scope's vectors, opened once
        assert _scores(lethe, "what does she like to drink") == first  # now from the kept scope
        assert _scores(cold, "what does she like to drink") == first and cold.keyring.opened.held == 0
    finally:
        cold.close()


def test_a_cached_vector_is_never_scored_once_another_node_destroyed_its_key(lethe, settings, monkeypatch):
    from lethe.vault.memory import ranked_scope

    populate(lethe)
    assert found(lethe, "what does she like to drink", limit=1) == [TEA]
    assert lethe.keyring.opened.held == 4
    reads = []  # (the stale copy at hand, the scope read) of each scope read
    real = ranked_scope._read
    monkeypatch.setattr(ranked_scope, "_read", lambda *a: reads.append((a[-1], real(*a))) or reads[-1][1])
    other = build(settings)  # a second node on the same store
    try:
        (key,) = _subject_keys(other)
        with (
            other.uow.maintenance("erasure runner"),
            other.uow.write() as conn,
        ):  # the key destroyed there, the rows left as they are
            other.keyring.mark_destroyed(conn, [key.key_name], key.created_at)
        assert found(lethe, "what does she like to drink") == []  # nothing opens, nothing scores
        assert lethe.keyring.opened.get((key.tenant_id, key.subject_ref, key.generation)) == {}
        assert lethe.keyring.opened.held == 0
        ((prior, scope),) = reads  # read again with the stale kept copy at hand: none of its vectors
        assert prior is not None and prior.vectors is not None and len(scope) == 4 and scope.vectors is None
    finally:
        other.close()


def test_forget_drops_the_subjects_opened_vectors_in_the_forgetting_process(lethe):
    populate(lethe)
    found(lethe, "what does she like to drink")
    assert lethe.keyring.opened.held == 4
    lethe.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    lethe.erasure.run_pending()
    assert lethe.keyring.opened.held == 0
    (key,) = _subject_keys(lethe)
    lethe.keyring.opened.put((key.tenant_id, key.subject_ref, key.generation), [(("m", 1, "x"), b"v")])
    assert len(lethe.keyring.opened) == 0  # revoked: a search in flight cannot put them back


def test_a_memory_written_after_its_scope_was_cached_is_opened_and_scored(lethe):
    populate(lethe)
    found(lethe, "what does she like to drink")  # the scope is warm now: rows are read alone
    coffee = lethe.memories.write(agent(), write_cmd("Alice orders an espresso every afternoon")).item
    r = lethe.search.search(agent(), SearchQuery(query="which coffee does she drink", purpose="support"))
    scores = {i.id: i.score for i in r.items}
    assert scores[coffee.id]["semantic"] > 0 and lethe.keyring.opened.held == 5


@pytest.mark.parametrize("read_by_id", [64, 0], ids=["by-id", "by-scope"])
def test_a_scope_read_again_after_a_write_opens_the_new_vector_and_ranks_as_a_cold_search(
    lethe, settings, monkeypatch, read_by_id
):
    from lethe.vault.memory import ranked_scope

    monkeypatch.setattr(ranked_scope, "READ_BY_ID", read_by_id)  # few misses by id, many with the scope
    populate(lethe)
    lethe.search.search(agent(), SearchQuery(query="tea", purpose="support", subject_id="alice@example.com"))
    assert lethe.keyring.opened.held == 4  # a narrow search reads (and keeps) the whole scope
    bob = lethe.memories.write(agent(), write_cmd("Bob prefers black coffee", subject="bob@example.com")).item
    cold = build(settings.model_copy(update={"vector_cache_entries": 0}))
    try:
        assert _scores(lethe, "what does he drink") == _scores(cold, "what does he drink")
        assert bob.id in {i for i, _ in _scores(lethe, "what does he drink")}
        assert lethe.keyring.opened.held == 5  # Bob's vector joined the four the kept scope held
    finally:
        cold.close()


def _scope_id(c) -> tuple:  # type: ignore[no-untyped-def]
    from lethe.vault.memory.search import MAX_RANKED_IN_MEMORY

    return ("t1", "a1", "support", c.search.vectors.model, MAX_RANKED_IN_MEMORY)


def test_a_search_after_a_write_opens_only_the_new_vector_and_takes_the_rest_from_the_stale_scope(
    lethe, settings, monkeypatch
):
    from lethe.vault.custody import sealing

    populate(lethe)
    opened: list[int] = []
    real = sealing.decrypt_many_for_subject
    monkeypatch.setattr(
        sealing, "decrypt_many_for_subject", lambda dek, items: opened.append(len(items)) or real(dek, items)
    )
    _scores(lethe, "what does she like to drink")
    assert sum(opened) == 4
    lethe.memories.write(agent(), write_cmd("Alice orders an espresso every afternoon"))
    cold = build(settings.model_copy(update={"vector_cache_entries": 0}))
    try:
        warm = _scores(lethe, "what does she like to drink")
        assert sum(opened) == 5 and lethe.keyring.opened.held == 5  # one AEAD open: the new memory's
        assert warm == _scores(cold, "what does she like to drink")  # ranked as if all were opened
    finally:
        cold.close()


def test_a_kept_scope_serves_searches_until_its_scope_changes(lethe, monkeypatch):
    from lethe.vault.memory import ranked_scope

    populate(lethe)
    reads = []
    real_read = ranked_scope._read
    monkeypatch.setattr(ranked_scope, "_read", lambda *a: reads.append(1) or real_read(*a))
    first = _scores(lethe, "what does she like to drink")
    assert _scores(lethe, "what does she like to drink") == first and len(reads) == 1  # kept
    lethe.memories.write(agent(), write_cmd("Alice orders an espresso every afternoon"))
    assert len(_scores(lethe, "what does she like to drink")) == len(first) + 1 and len(reads) == 2
    assert len(_scores(lethe, "coffee")) > 0 and len(reads) == 2  # kept again, under the new token


def test_a_write_by_another_process_is_seen_by_the_next_search_of_a_kept_scope(lethe, settings):
    populate(lethe)
    before = found(lethe, "espresso afternoon")
    other = build(settings)  # a second node (or the CLI) on the same store
    try:
        other.memories.write(agent(), write_cmd("Alice orders an espresso every afternoon"))
    finally:
        other.close()
    assert "Alice orders an espresso every afternoon" in found(lethe, "espresso afternoon")
    assert "Alice orders an espresso every afternoon" not in before


def test_the_memory_mapped_token_rows_embed_the_same_bits_as_wordllamas_own_float32_matrix():
    """The default embedder reads its token matrix from the weights file (float16, widened
    on lookup) instead of holding WordLlama's float32 copy; its vectors must not change."""
    pytest.importorskip("wordllama")
    import json
    from pathlib import Path

    import numpy as np
    import wordllama
    from wordllama import WordLlama

    from lethe.vault.memory import wordllama_embedder as w

    own = WordLlama.load(
        config=w.CONFIG, dim=w.DIMS, cache_dir=Path(wordllama.__file__).parent, disable_download=True
    )
    golden = json.loads((Path(__file__).parents[2] / "src/lethe/api/bench/golden/recall_v1.json").read_text())
    texts = (
        [m["content"] for m in golden["memories"]]
        + [q["query"] for q in golden["queries"]]
        + ["Zürich ☕ 東京"]
    )
    embedder = w.WordLlamaEmbedder()
    assert isinstance(embedder._model.embedding, w.TokenRows)
    assert np.array_equal(embedder.embed(texts), np.asarray(own.embed(texts, norm=True), dtype=np.float32))


def test_an_empty_text_embeds_as_a_zero_vector_without_a_warning(lethe):
    """The only text WordLlama makes no token of (content must not be blank; a library
    search may be): its mean of no rows had a norm of 0, and 0/0 gave a vector of NaN."""
    import warnings

    import numpy as np

    embedder = lethe.search.vectors.embedder
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empty, tea = embedder.embed(["", TEA])
    assert not empty.any() and np.isfinite(empty).all()
    assert abs(float(np.linalg.norm(tea)) - 1.0) < 1e-6


def test_a_search_without_query_text_ranks_by_standing_alone(lethe):
    """A query vector of NaN made every total NaN, and the rows came in storage order."""
    confidences = (0.15, 0.35, 0.55, 0.75, 0.95)
    for i, conf in enumerate(confidences):
        lethe.memories.write(agent(), write_cmd(f"{OTHERS[i % 3]} ({i})", confidence=conf))
    result = lethe.search.search(agent(), SearchQuery(query="", purpose="support"))
    assert result.recall == "hybrid"
    assert [i.confidence for i in result.items] == sorted(confidences, reverse=True)
    assert {i.score["semantic"] for i in result.items} == {0.0}
