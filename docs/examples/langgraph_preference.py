"""A LangGraph agent that remembers a user's preference across threads, in Lethe.

    pip install "lethe-vault[langgraph] @ $LETHE_URL/wheels/lethe_vault-0.1.0-py3-none-any.whl"
    LETHE_URL=... LETHE_TOKEN=<an agent token for purpose support that may assert user_statement> \
    LETHE_STORE_ID_KEY=<a secret of 16+ bytes, the same on every run> python langgraph_preference.py

The node stands in for a model call so the example runs anywhere: it stores
"I prefer ..." as a preference and answers every later message in that language. The
checkpointer keeps threads apart; the store is shared by all of them.

The store stores what the user typed, word for word, so it is configured as a user
channel (source_type="user_statement": active at once, read back by the next thread; the
token must be allowed to assert it). A store of what the model concludes would say
"agent_inference": its items stay in quarantine, and read as absent, until a reviewer
promotes them.
"""

import os

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from lethe.client import AsyncLetheClient, LetheClient
from lethe.integrations.langgraph import LetheStore


class Turn(TypedDict, total=False):
    message: str
    reply: str


def assistant(state: Turn, config: RunnableConfig, *, store: BaseStore) -> Turn:
    user = config["configurable"]["user_id"]
    if state["message"].startswith("I prefer "):
        store.put((user, "preference"), "language", {"text": state["message"].removeprefix("I prefer ")})
        return {"reply": "Noted."}
    found = store.search((user, "preference"), query="language", limit=1)
    language = found[0].value["text"] if found else "English"
    return {"reply": f"[{language}] {state['message']}"}


store = LetheStore(
    LetheClient(),  # LETHE_URL, LETHE_TOKEN
    aclient=AsyncLetheClient(),
    purpose="support",  # the agent is the token's (the store asks the server)
    source_type="user_statement",  # the deployment's word for where values come from, never the value's
)  # id_key from LETHE_STORE_ID_KEY
graph = StateGraph(Turn)
graph.add_node("assistant", assistant)
graph.add_edge(START, "assistant")
graph.add_edge("assistant", END)
app = graph.compile(checkpointer=InMemorySaver(), store=store)

user = os.environ.get("EXAMPLE_USER", "customer-1001")
for thread, message in [("monday", "I prefer Spanish"), ("tuesday", "Where is my parcel?")]:
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    print(thread, app.invoke({"message": message}, config)["reply"])
# monday Noted.
# tuesday [Spanish] Where is my parcel?
