"""uvicorn's httptools protocol with a deadline for a request's headers.

uvicorn arms no timer while a request's headers arrive: a connection that sends half a
request line, or one header byte every few seconds (each byte also cancels the keep-alive
timer), is held open for ever, and enough of them exhaust the server's sockets. Here the
headers of each request must be complete ``header_timeout`` seconds after the connection
opened, or after the previous response was sent; otherwise the connection is closed. One
deadline per request, not per byte, so dribbling does not extend it. Once the headers are
in, the body has its own deadline (``api.http.middleware``, 408).

``lethe serve`` passes ``serving_protocol(seconds)`` to uvicorn as its HTTP protocol
(``LETHE_HEADER_READ_TIMEOUT_SECONDS``; tests/api/test_connection_limits.py).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` closing a connection whose request headers are late."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        # A pipelined request already has its headers: it starts now, with no deadline.
        waiting = not self.pipeline
        super().on_response_complete()
        if waiting and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _late(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def serving_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """The protocol uvicorn is given: picklable by reference (``--workers`` sends it to
    each worker process), so a partial of the class rather than a class made here."""
    made = functools.partial(HeaderTimeoutProtocol, header_timeout=header_timeout)
    return cast(type[asyncio.Protocol], made)
