"""``lethe.integrations``: adapters that plug Lethe into agent frameworks, over ``lethe.client``.

Each adapter lives in its own subpackage and needs its framework's extra (the
``langgraph`` extra, installed as docs/agents.md says, for ``lethe.integrations.langgraph``).
Adapters talk to Lethe only through the HTTP API, so a token's scope, quarantine and budgets apply
to them exactly as to any other caller.
"""
