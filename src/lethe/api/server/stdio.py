"""``lethe mcp``: the MCP tools over stdio, for a desktop host that spawns the process.

The server runs in-process on the store (like every CLI command, it opens the store
``LETHE_DATA_DIR`` names), inside the same HTTP app ``lethe serve`` runs, with its
background work (the erasure runner, expiry, compaction), but listens on no socket:
each tool call is one in-process request to that app with the token from
``LETHE_TOKEN``, so it is authorised, limited and refused exactly as over HTTP. Every
call carries the process's agent session (``Lethe-Session``): ``LETHE_SESSION``, or one
generated at start, so a web page the model stored taints what it writes later. The
token is checked once at start; a role with no tools is refused, and so is a user channel
(``LETHE_MCP_USER_CHANNEL``, ``lethe mcp --user-channel``: the source type every
``remember`` records, ``api.mcp.tools``) whose source type the token may not assert. Logs go to stderr
(stdout carries the protocol). For a remote Lethe, connect the host to the server's
``/mcp`` over Streamable HTTP instead.

Exceptions: ``StoreNotReady`` and other ``VaultError`` from opening the store. A token
that is not valid, or whose role has no tools, is not an exception: ``serve_stdio``
returns the refusal (raising it through the app's task groups would wrap it).
"""

from __future__ import annotations

import os
import uuid

from lethe.api.mcp.catalogue import scopes_of
from lethe.api.mcp.identity import identity_of
from lethe.api.mcp.server import asgi_connector, build_server
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.errors import InvalidCommand, Unauthenticated
from lethe.vault.memory.agent_sessions import check_session_id
from lethe.vault.policy import DEFAULT_POLICY, allowed_source_types


def stdio_session() -> str:
    """The agent session of this process's tool calls: ``LETHE_SESSION``, else a new one (one
    host process is one conversation). ``InvalidCommand`` for a malformed ``LETHE_SESSION``."""
    return check_session_id(os.environ.get("LETHE_SESSION") or f"mcp-{uuid.uuid4().hex}")


async def serve_stdio(settings: Settings, token: str) -> str | None:
    """Serve until the host closes stdin; or return why this token cannot be served."""
    try:
        session = stdio_session()
    except InvalidCommand as exc:
        return f"LETHE_SESSION is not a session id: {exc}"
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        try:
            caller = app.state.tokens.authenticate(token)
        except Unauthenticated:
            return "LETHE_TOKEN is not a valid Lethe token (unknown, expired or revoked)"
        who = identity_of(token, caller, session)
        if not scopes_of(who.role):
            return f"a {who.role.value} token has no MCP tools"
        channel = settings.mcp_user_channel
        if channel is not None and channel not in (allowed := allowed_source_types(DEFAULT_POLICY, caller)):
            return (
                f"this token may not assert {channel.value}, so it cannot serve a user channel for it; "
                f"it may assert: {', '.join(allowed) or 'none'}"
            )
        await build_server(lambda: who, asgi_connector(app), channel=channel).run_stdio_async()
    return None
