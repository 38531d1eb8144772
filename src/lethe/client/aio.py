"""``AsyncLetheClient``: the asyncio client (httpx.AsyncClient underneath); same operations.

Exceptions: the ``lethe.client.errors`` tree (see ``lethe.client.operations``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx

from lethe.client.base import answer, masked, no_answer, request_args, resolve
from lethe.client.calls import AsyncRunner, Call, Retries
from lethe.client.operations import Operations

T = TypeVar("T")


class AsyncLetheClient(AsyncRunner, Operations):
    """The Lethe HTTP API for asyncio: ``await client.get_memory(id)``; ``async with`` or ``aclose()``.

    Arguments as ``LetheClient``; ``transport`` may be ``httpx.ASGITransport(app)`` to
    call an in-process server (the MCP server does, so its tools go through the HTTP API).
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float | httpx.Timeout = 10.0,
        retries: Retries | None = None,
        headers: Mapping[str, str] | None = None,
        session_id: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._settings = resolve(base_url, token, timeout, headers, session_id)
        self._retries = retries or Retries()
        self._http = httpx.AsyncClient(
            base_url=self._settings.base_url,
            headers=self._settings.headers,
            timeout=self._settings.timeout,
            transport=transport,
        )

    async def send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(**request_args(call))
            except httpx.TransportError as exc:
                wait = self._retries.after_error(call, attempt, exc)
                if wait is None:
                    raise no_answer(call, exc) from exc
            else:
                wait = None if response.is_success else self._retries.after_response(call, attempt, response)
                if wait is None:
                    return answer(call, response)
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncLetheClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncLetheClient({masked(self._settings)})"
