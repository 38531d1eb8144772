"""A real LangGraph graph with ``LetheStore`` as its long-term store: a preference told in
one thread is remembered in another (the checkpointer keeps threads apart; the store is
shared across them), and forgetting the user removes it from every thread's view.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from lethe.client import AsyncLetheClient, LetheClient
from lethe.integrations.langgraph import LetheStore
from tests.api.conftest import Served, serve_with_tokens

pytestmark = pytest.mark.slow


class Turn(TypedDict, total=False):
    message: str
    reply: str


def assistant(state: Turn, config: RunnableConfig, *, store: BaseStore) -> Turn:
    """A deterministic stand-in for a model: remembers 'I prefer X', answers in the preference."""
    user = config["configurable"]["user_id"]
    message = state["message"]
    if message.startswith("I prefer "):
        store.put((user, "preference"), "language", {"text": message.removeprefix("I prefer ")})
        return {"reply": "Noted."}
    remembered = store.search((user, "preference"), query="language preference", limit=1)
    language = remembered[0].value["text"] if remembered else "English"
    return {"reply": f"[{language}] {message}"}


def build_graph(store: BaseStore):  # type: ignore[no-untyped-def]
    graph = StateGraph(Turn)
    graph.add_node("assistant", assistant)
    graph.add_edge(START, "assistant")
    graph.add_edge("assistant", END)
    return graph.compile(checkpointer=InMemorySaver(), store=store)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = serve_with_tokens(tmp_path_factory.mktemp("graph"))
    yield s
    s.server.stop()


def test_a_preference_told_in_one_thread_is_used_in_another(served: Served) -> None:
    token = served.tokens["agent"]
    store = LetheStore(
        LetheClient(served.url, token),
        aclient=AsyncLetheClient(served.url, token),
        purpose="support",
        agent_id="a1",
        id_key="graph-test-id-key-0123",
        source_type="user_statement",
    )
    app = build_graph(store)
    user = f"user-{uuid.uuid4().hex[:8]}"

    def say(thread: str, message: str) -> str:
        config = {"configurable": {"thread_id": thread, "user_id": user}}
        return app.invoke({"message": message}, config)["reply"]

    assert say("thread-1", "Hello") == "[English] Hello"
    assert say("thread-1", "I prefer Spanish") == "Noted."
    assert say("thread-2", "Where is my order?") == "[Spanish] Where is my order?"

    # The async path of the same graph reads the same memory.
    import asyncio

    config = {"configurable": {"thread_id": "thread-3", "user_id": user}}
    reply = asyncio.run(app.ainvoke({"message": "Hi again"}, config))["reply"]
    assert reply == "[Spanish] Hi again"

    with LetheClient(served.url, served.tokens["privacy_officer"], timeout=30) as officer:
        assert store.forget_subject(user, officer)
    assert say("thread-4", "Hello?") == "[English] Hello?"
