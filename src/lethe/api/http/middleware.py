"""ASGI middleware of the HTTP API that must see the raw request stream.

``BodyLimitMiddleware`` reads the body itself so a missing or lying ``Content-Length``
cannot get past it: at most ``max_body_bytes`` (413), all of it within
``body_read_timeout_seconds`` (408), so a half-sent body cannot hold a request open.

Exceptions: none raised; refusals are problem responses (``api.http.problems``).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lethe.api.http import problems
from lethe.api.http.logging import request_context


class BodyLimitMiddleware:
    """413 for a body over the limit, counted from the stream (not from Content-Length);
    408 for a body that has not fully arrived ``read_timeout`` seconds after the request
    started: one deadline for the whole body, so dribbling a byte at a time does not
    extend it. Both answers close the connection, whose stream is left mid-body."""

    def __init__(self, app: ASGIApp, max_bytes: int, read_timeout: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout = read_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send, 413, "Request body too large", self._too_large)
            return
        try:
            async with asyncio.timeout(self.read_timeout):
                body = await self._read_body(receive)
        except TimeoutError:
            detail = f"the request body did not arrive within {self.read_timeout:g} seconds"
            await self._refuse(scope, receive, send, 408, "Request timeout", detail)
            return
        if body is None:  # the client went away: nothing to answer, logged as a hang-up
            ctx = request_context(scope)
            if ctx is not None:
                ctx.client_closed = True
            return
        if len(body) > self.max_bytes:
            await self._refuse(scope, receive, send, 413, "Request body too large", self._too_large)
            return
        buffered: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

        async def replay() -> Message:
            return buffered.pop() if buffered else await receive()

        await self.app(scope, replay, send)

    @property
    def _too_large(self) -> str:
        return f"the request body exceeds {self.max_bytes} bytes"

    async def _read_body(self, receive: Receive) -> bytearray | None:
        """The body, or None if the client disconnected; stops reading once over the limit."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_bytes or not message.get("more_body", False):
                return body

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, title: str, detail: str
    ) -> None:
        response = problems.problem_response(
            status, title, detail, scope.get("path", ""), headers={"Connection": "close"}
        )
        await response(scope, receive, send)
