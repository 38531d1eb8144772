"""Every HTML answer is framed by nobody and loads nothing it was not built with.

The console, ``/verify`` and the API docs set their own Content-Security-Policy; the JSON
API's renderings (``?format=html`` certificates and subject access exports) set none, and
a page that can be framed can be clickjacked. ``HtmlHeadersMiddleware`` adds to every
``text/html`` response what it lacks: ``HTML_CSP`` (a page's own policy stands, with
``frame-ancestors 'none'`` appended if it has none), ``X-Frame-Options: DENY`` and
``X-Content-Type-Options: nosniff`` (tests/api/test_html_headers.py walks every route).
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The renderings are self-contained: inline styles, nothing else (vault/oversight/render_kit.py).
HTML_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


class HtmlHeadersMiddleware:
    """Adds ``HTML_CSP``, frame protection and ``nosniff`` to every HTML response lacking them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").lower().startswith("text/html"):
                    policy = headers.setdefault("Content-Security-Policy", HTML_CSP)
                    if "frame-ancestors" not in policy:
                        headers["Content-Security-Policy"] = f"{policy}; frame-ancestors 'none'"
                    headers.setdefault("X-Frame-Options", "DENY")
                    headers.setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        await self.app(scope, receive, send_guarded)
