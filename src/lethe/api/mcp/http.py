"""``/mcp`` in ``lethe serve``: Streamable HTTP as an OAuth 2.1 resource server over Lethe tokens.

- ``POST /mcp``: the SDK's Streamable HTTP endpoint (stateless, JSON answers) behind its
  bearer middleware with ``LetheTokenVerifier``. No or a bad token: 401 with
  ``WWW-Authenticate: Bearer error="invalid_token", ..., resource_metadata="<url>"``; a
  role with no tools (reviewer, admin): 403 ``insufficient_scope``.
- ``GET /mcp``: 405 (``Allow: POST``), as the Streamable HTTP transport allows a server
  that offers no event stream; this one is stateless, so it has nothing to push.
- ``GET /.well-known/oauth-protected-resource`` and ``.../mcp`` (RFC 9728): the resource
  ``<public url>/mcp``, its scope ``mcp``, bearer tokens in the header; the authorization
  server named is Lethe itself, which issues tokens out of band (``lethe token create``,
  ``POST /v1/admin/tokens``): there is no interactive OAuth flow to discover.

A 401 here costs the client address as a failed authentication on the HTTP API does
(``auth_failure_rate_limit``; 429 past it, before a token this process has not accepted is
looked up), and the access line carries the token id.
``LETHE_PUBLIC_URL`` is the URL clients reach the server at (``lethe serve`` defaults it
to its own address); it names the resource and allows its ``Host`` (DNS-rebinding guard).

``api.mcp.on_demand`` imports this module, and so the SDK, on the first request to ``/mcp``
or the metadata. Exceptions: ``ImportError`` when the SDK is not installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.routes import create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lethe.api.http.auth import RateLimiter
from lethe.api.http.logging import request_context
from lethe.api.http.problems import ApiProblem, problem_response
from lethe.api.mcp.catalogue import SCOPE
from lethe.api.mcp.identity import REQUEST_SESSION, LetheTokenVerifier, from_access_token
from lethe.api.mcp.on_demand import METADATA, PATH, public_url
from lethe.api.mcp.server import LetheMCPServer, asgi_connector, build_server
from lethe.api.settings import Settings
from lethe.vault.access.tokens import TokenService

NO_STREAM = "this MCP endpoint is stateless and offers no event stream: POST JSON-RPC requests to it"
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class McpGate:
    """Charges a 401 to the client address (429 past the limit) and logs the token id."""

    def __init__(self, limiter: Callable[[], RateLimiter], tokens: Callable[[], TokenService]) -> None:
        self.app: ASGIApp | None = None  # the SDK's app, built anew for each run (``McpMount.running``)
        self.limiter = limiter  # the HTTP API's failed-authentication limiter
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_gated(message: Message) -> None:
            if message["type"] == "http.response.start":
                user = scope.get("user")
                ctx = request_context(scope)
                if ctx is not None and getattr(user, "access_token", None) is not None:
                    ctx.token_id = user.access_token.client_id
                if message["status"] == 401:
                    try:
                        self.limiter().charge(_address(scope))
                    except ApiProblem as over:
                        limited = problem_response(
                            over.status, over.title, over.detail, PATH, headers=over.headers
                        )
                        await limited(scope, receive, send)
                        raise _Answered from None
            await send(message)

        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == PATH:
            # The transport is stateless: there is no server-initiated message to stream, and
            # the SDK's answer to GET was an event stream held open for ever (one per request).
            refused = problem_response(405, "Method not allowed", NO_STREAM, PATH, headers={"Allow": "POST"})
            await refused(scope, receive, send)
            return
        if scope["type"] == "http" and not self.tokens().accepted(_bearer_token(scope)):
            try:  # past the address's failure limit, an unseen token is not looked up
                self.limiter().check(_address(scope))
            except ApiProblem as over:
                limited = problem_response(over.status, over.title, over.detail, PATH, headers=over.headers)
                await limited(scope, receive, send)
                return
        if self.app is None:
            raise RuntimeError("/mcp is served only while the app runs (its lifespan)")
        # The agent's session, passed on to the tools' HTTP calls (the API checks its form).
        session = Headers(scope=scope).get("lethe-session") if scope["type"] == "http" else None
        reset = REQUEST_SESSION.set(session)
        try:
            await self.app(scope, receive, send_gated)
        except _Answered:
            return
        finally:
            REQUEST_SESSION.reset(reset)


def _address(scope: Scope) -> str:
    return scope["client"][0] if scope.get("client") else "unknown"


def _bearer_token(scope: Scope) -> str | None:
    scheme, _, token = (Headers(scope=scope).get("authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


class _Answered(Exception):
    """The gate answered in place of the SDK; the rest of the SDK's answer is dropped."""


class McpMount:
    """The MCP server mounted at ``/mcp``; ``running()`` serves it for one run of the app.

    The SDK's session manager runs once per instance, and an app may be started more than
    once (tests do), so each run builds the SDK's Streamable HTTP app anew.
    """

    def __init__(self, server: LetheMCPServer, gate: McpGate, settings: Settings, public: str) -> None:
        self.server = server
        self.gate = gate
        parts = urlsplit(public)
        self.security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[parts.netloc, *LOOPBACK_HOSTS],
            allowed_origins=[f"{parts.scheme}://{parts.netloc}", *LOOPBACK_ORIGINS],
        )
        self.max_body = settings.max_body_bytes
        self.routes: list[Route] = []  # what ``build_mcp`` serves: /mcp and the metadata

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self.gate.app = self.server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=self.max_body,
            transport_security=self.security,
        )
        try:
            async with self.server.session_manager.run():
                yield
        finally:
            self.gate.app = None


def build_mcp(app: Any, settings: Settings) -> McpMount:
    """The MCP server of the FastAPI ``app``: ``/mcp`` and the protected-resource metadata
    as ``McpMount.routes``, served while ``McpMount.running()`` is open."""
    public = public_url(settings)
    resource = AnyHttpUrl(f"{public}{PATH}")
    auth = AuthSettings(
        issuer_url=AnyHttpUrl(public),
        resource_server_url=resource,
        required_scopes=[SCOPE],
        validate_token_resource=False,  # Lethe tokens name no audience; the verifier checks them
    )
    server = build_server(
        from_access_token,
        asgi_connector(app),
        auth,
        LetheTokenVerifier(lambda: app.state.tokens),
        channel=settings.mcp_user_channel,  # each write is refused unless its token may assert it
    )
    gate = McpGate(lambda: app.state.auth_failure_limiter, lambda: app.state.tokens)
    mount = McpMount(server, gate, settings, public)
    mount.routes.append(Route(PATH, endpoint=gate, include_in_schema=False))
    for route in create_protected_resource_routes(resource, [AnyHttpUrl(public)], [SCOPE], "Lethe MCP"):
        mount.routes.append(route)  # /.well-known/oauth-protected-resource/mcp (RFC 9728 §3.1)
        mount.routes.append(Route(METADATA, endpoint=route.endpoint, methods=route.methods))
    return mount
