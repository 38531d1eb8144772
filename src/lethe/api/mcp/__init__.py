"""The MCP server: Lethe's agent, privacy-officer and auditor operations as MCP tools.

Built with the official MCP Python SDK (``mcp`` 2.x, ``MCPServer``); needs the extra
the ``mcp`` extra (installed from the server's ``/wheels/`` URL: docs/agents.md). Two ways to reach it:
- ``lethe serve`` mounts it at ``/mcp`` (Streamable HTTP) as an OAuth 2.1 resource server
  over Lethe's own bearer tokens (``api.mcp.http``);
- ``lethe mcp`` runs it over stdio for a desktop host, with the token in ``LETHE_TOKEN``
  (``api.server.stdio``).

Every tool calls the HTTP API with the caller's own token (``lethe.client`` over an
in-process ASGI transport), so scope, quarantine, budgets, rate limits, validation and
problems are exactly the HTTP API's: there is no second authorisation path. Which tools a
token sees is derived from the same role table (``ROUTE_ROLES``) as the routes they call.

Modules: ``catalogue`` (tools and resources, and which route each calls), ``identity``
(the caller, the token verifier), ``tools`` (the tool and resource functions), ``server``
(the ``MCPServer`` with per-role listings), ``http`` (the /mcp mount), ``stdio``.
"""
