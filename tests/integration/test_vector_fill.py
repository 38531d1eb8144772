"""Memories written without a vector (by a process with no embedder: an agent's ``lethe mcp``
without the semantic extra, a node configured lexical) are found and embedded by a server
that has one, and a search calls its recall ``hybrid`` only once its scope's vectors are all
there. SQLite and PostgreSQL, behind the tenant wall."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lethe.api.bootstrap import Container, build
from lethe.api.http import background
from lethe.api.settings import Settings
from lethe.vault.model import SearchQuery
from tests.conftest import agent, write_cmd

TEA = "Alice prefers green tea in the morning"
OTHERS = ("Alice works as a nurse at the hospital", "Alice plays the violin in a band")
DRINK = SearchQuery(query="what does she like to drink", purpose="support", limit=1)


@pytest.fixture
def lexical_writer(lethe: Container, settings: Settings) -> Iterator[Container]:
    """A second process on the same store without an embedder (writes leave no vector)."""
    c = build(settings.model_copy(update={"embedding_model": "none"}))
    yield c
    c.close()


def test_a_scope_with_a_memory_written_without_a_vector_is_not_called_hybrid(
    lethe: Container, lexical_writer: Container
) -> None:
    for text in OTHERS:
        lethe.memories.write(agent(), write_cmd(text))
    assert lethe.search.search(agent(), DRINK).recall == "hybrid"  # every vector there
    lexical_writer.memories.write(agent(), write_cmd(TEA))
    result = lethe.search.search(agent(), DRINK)
    assert result.recall == "lexical"


def test_the_fill_embeds_what_was_written_without_a_vector_and_recall_is_hybrid_again(
    lethe: Container, lexical_writer: Container
) -> None:
    for text in OTHERS:
        lethe.memories.write(agent(), write_cmd(text))
    lexical_writer.memories.write(agent(), write_cmd(TEA))
    lexical_writer.memories.write(agent(tenant="t2"), write_cmd(TEA))  # the fill spans tenants
    fill = lethe.vector_fill
    assert fill.missing() == 2 and lexical_writer.vector_fill.missing() == 0  # no model: none due
    assert fill.fill_page() == 2 and fill.remaining == 0
    assert fill.fill_page() == 0  # nothing left: nothing written twice
    result = lethe.search.search(agent(), DRINK)
    assert result.recall == "hybrid" and [i.content for i in result.items] == [TEA]
    assert result.items[0].score["semantic"] > 0


def test_an_update_written_without_a_vector_is_filled_at_its_new_version(
    lethe: Container, lexical_writer: Container
) -> None:
    first = lethe.memories.write(agent(), write_cmd("Alice prefers coffee")).item
    lexical_writer.memories.write(agent(), write_cmd(TEA, id=first.id, expected_version=first.version))
    assert lethe.vector_fill.missing() == 1  # the old version's vector does not count
    assert lethe.vector_fill.fill_page() == 1
    result = lethe.search.search(agent(), DRINK)
    assert result.recall == "hybrid" and [i.content for i in result.items] == [TEA]


def test_the_servers_job_counts_again_once_none_was_missing(
    lethe: Container, lexical_writer: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "VECTOR_RECOUNT_SECONDS", 1e9)
    lexical_writer.memories.write(agent(), write_cmd(TEA))
    assert background._fill_vectors(lethe) == 1 and lethe.vector_fill.remaining == 0
    lexical_writer.memories.write(agent(), write_cmd(OTHERS[0]))  # written after the store was whole
    assert background._fill_vectors(lethe) == 0  # within the recount interval: not counted again
    monkeypatch.setattr(background, "VECTOR_RECOUNT_SECONDS", 0.0)
    assert background._fill_vectors(lethe) == 1 and lethe.vector_fill.remaining == 0
