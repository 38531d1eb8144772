"""Who is calling an MCP tool: the token, read by Lethe's own ``TokenService``.

Over Streamable HTTP the SDK's bearer middleware calls ``LetheTokenVerifier`` (the SDK's
``TokenVerifier`` protocol) for every request; the ``AccessToken`` it returns carries the
caller's role and purposes as claims and the scope ``mcp`` when the role has tools.
Over stdio the token comes from ``LETHE_TOKEN`` once, at start-up. The agent's session
(``Lethe-Session``) is the ``/mcp`` request's header of that name, or over stdio
``LETHE_SESSION`` (else one generated per process).

Exceptions: ``verify_token`` returns None for a token that is not valid (the SDK answers
401 with the resource-metadata pointer); ``StoreUnavailable`` propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from lethe.api.mcp.catalogue import scopes_of
from lethe.vault.access.tokens import TokenService
from lethe.vault.errors import Unauthenticated
from lethe.vault.model import Caller, Role


@dataclass(frozen=True)
class Identity:
    """The caller of one MCP request: its bearer token (passed on to the HTTP API) and role."""

    token: str
    role: Role
    purposes: tuple[str, ...]
    # The agent's session its tool calls send as ``Lethe-Session`` (``vault.memory.agent_sessions``).
    session_id: str | None = None

    def __repr__(self) -> str:
        return f"Identity(role={self.role.value!r}, purposes={self.purposes!r})"


def identity_of(token: str, caller: Caller, session_id: str | None = None) -> Identity:
    return Identity(token, caller.role, tuple(sorted(caller.purposes)), session_id)


# The ``Lethe-Session`` header of the current ``/mcp`` request (``http.McpGate`` sets it).
REQUEST_SESSION: ContextVar[str | None] = ContextVar("lethe_mcp_session", default=None)


class LetheTokenVerifier:
    """The SDK's ``TokenVerifier`` over Lethe's tokens (one lookup per request, as the HTTP API)."""

    def __init__(self, tokens: Callable[[], TokenService]) -> None:
        self._tokens = tokens  # read when called: the app's lifespan builds the service

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            caller = await anyio.to_thread.run_sync(self._tokens().authenticate, token)
        except Unauthenticated:
            return None
        return AccessToken(
            token=token,
            client_id=caller.principal,  # the token id: safe to log, identifies the session owner
            scopes=scopes_of(caller.role),
            claims={"role": caller.role.value, "purposes": sorted(caller.purposes)},
        )


def from_access_token() -> Identity | None:
    """The identity of the current HTTP request, as the bearer middleware verified it."""
    access = get_access_token()
    if access is None or access.claims is None:
        return None
    purposes = tuple(access.claims["purposes"])
    return Identity(access.token, Role(access.claims["role"]), purposes, REQUEST_SESSION.get())
