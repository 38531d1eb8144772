"""``lethe.integrations.langgraph``: ``LetheStore``, a LangGraph ``BaseStore`` over Lethe.

Install with ``pip install lethe-vault[langgraph]``. Namespaces are ``(subject_id, kind)``
under the agent token's tenant and agent and the store's purpose; values are JSON in the
memory's encrypted content; ``search(query=...)`` is Lethe's scoped recall. The mapping
and its limits are in ``mapping`` and docs/agents.md.

    from lethe.client import LetheClient
    from lethe.integrations.langgraph import LetheStore
    store = LetheStore(LetheClient(token=AGENT_TOKEN), purpose="support", agent_id="support-bot",
                       id_key=STORE_KEY)
    store.put(("customer-1001", "preference"), "language", {"text": "Answer in Spanish"})
"""

from lethe.integrations.langgraph.store import KeyUnavailable, LetheStore

__all__ = ["KeyUnavailable", "LetheStore"]
