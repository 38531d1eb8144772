"""``LetheStore`` takes its agent from its token: the server says it (``GET /v1/whoami``)
before the store derives its first item id, so a store configured for another agent is
refused before anything is written, and a store need not repeat the token's agent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from lethe.client import AsyncLetheClient, LetheClient
from lethe.integrations.langgraph import LetheStore
from lethe.integrations.langgraph.mapping import memory_id, place_of
from tests.api.conftest import Served, serve_with_tokens

pytestmark = pytest.mark.slow

ID_KEY = "store-agent-test-id-key"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = serve_with_tokens(tmp_path_factory.mktemp("store-agent"))
    yield s
    s.server.stop()


def test_a_store_naming_another_agent_is_refused_before_it_writes(served: Served) -> None:
    client = LetheClient(served.server.url, served.tokens["agent"], timeout=30)  # agent a1
    store = LetheStore(
        client, purpose="support", agent_id="support-bot", id_key=ID_KEY, source_type="user_statement"
    )
    with pytest.raises(ValueError, match="not the token's agent \\('a1'\\)"):
        store.put(("customer-stray", "preference"), "language", {"text": "Spanish"})
    assert client.list_memories(subject_id="customer-stray").items == []  # no stray memory landed


def test_a_store_without_agent_id_uses_the_tokens_agent(served: Served) -> None:
    token = served.tokens["agent2"]  # agent a2
    client = LetheClient(served.server.url, token, timeout=30)
    assert client.whoami().agent_id == "a2"
    store = LetheStore(
        client,
        aclient=AsyncLetheClient(served.server.url, token, timeout=30),
        purpose="support",
        id_key=ID_KEY,
        source_type="user_statement",
    )
    where = ("customer-derived", "preference")
    store.put(where, "language", {"text": "Spanish"})
    item = store.get(where, "language")
    assert item is not None and item.value == {"text": "Spanish"}
    (mine,) = client.list_memories(subject_id="customer-derived").items
    assert mine.agent_id == "a2"
    assert mine.id == memory_id(ID_KEY.encode(), "a2", "support", place_of(where), "language")
    again = asyncio.run(store.aget(where, "language"))  # the async path derives the same id
    assert again is not None and again.value == {"text": "Spanish"}


def test_a_store_needs_an_agent_token(served: Served) -> None:
    client = LetheClient(served.server.url, served.tokens["reviewer"], timeout=30)
    store = LetheStore(client, purpose="support", id_key=ID_KEY, source_type="user_statement")
    with pytest.raises(ValueError, match="needs an agent token; this one is a reviewer token"):
        store.get(("customer-x", "preference"), "language")
