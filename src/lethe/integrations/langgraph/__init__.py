"""``lethe.integrations.langgraph``: ``LetheStore``, a LangGraph ``BaseStore`` over Lethe.

Install the ``langgraph`` extra as docs/agents.md says (by the server's wheel URL).
Namespaces are ``(subject_id, kind)``
under the agent token's tenant and agent and the store's purpose; values are JSON in the
memory's encrypted content; ``search(query=...)`` is Lethe's scoped recall. The mapping
and its limits are in ``mapping`` and docs/agents.md.

    from lethe.client import LetheClient
    from lethe.integrations.langgraph import LetheStore
    # The values are what the user said on this channel: active at once (LetheStore's docstring
    # says what each source type means for put then get; the token must be allowed to assert it).
    store = LetheStore(LetheClient(token=AGENT_TOKEN), purpose="support",
                       id_key=STORE_KEY, source_type="user_statement")  # the agent: the token's
    store.put(("customer-1001", "preference"), "language", {"text": "Answer in Spanish"})
"""

from lethe.integrations.langgraph.store import KeyUnavailable, LetheStore

__all__ = ["KeyUnavailable", "LetheStore"]
