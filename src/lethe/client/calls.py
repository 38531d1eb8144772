"""One description of an API call, run by the sync or the async client alike.

An endpoint is one ``@operation`` function that turns its arguments into a ``Call``:
method, path, body, how to read the answer, and whether resending it is safe. The
function is written once and becomes a method of both ``LetheClient`` (returning the
result) and ``AsyncLetheClient`` (returning an awaitable), so adding an endpoint to the
client is one small function in ``lethe.client.operations``.

A ``Call`` is built once per logical request: an idempotency key generated while
building it is reused by every retry of that request, and never by another request.

``Retries`` decides when to resend (see ``Retries.after_error``/``after_response``):
- a request that never reached the server (connect failed, pool timed out): always;
- a 429: always, after its ``Retry-After`` if that is at most ``max_wait`` (the limiter
  answers before any work is done);
- lost answers (read timeout, reset) and 502/503/504: only a ``Call`` marked
  ``retry=True``: reads, and writes carrying an idempotency key. A POST without a key is
  never resent once it may have reached the server.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, overload

import httpx

from lethe.client.errors import retry_after

T = TypeVar("T")
P = ParamSpec("P")

RESENT_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: what to send, how to read a success, and whether a resend is safe."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    json: Mapping[str, Any] | None = None
    params: Mapping[str, Any] | None = None
    retry: bool = False  # safe to send again after it may have reached the server


@dataclass(frozen=True)
class Retries:
    """How often and how long to retry; ``Retries(attempts=1)`` never retries."""

    attempts: int = 3
    backoff: float = 0.25  # seconds before the second attempt; doubles, with jitter
    max_wait: float = 10.0  # longest Retry-After honoured; a longer one is raised at once

    def _pause(self, attempt: int) -> float:
        return self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random() / 2)

    def after_error(self, call: Call[Any], attempt: int, exc: httpx.TransportError) -> float | None:
        """Seconds to wait before resending after ``exc``, or None to give up."""
        if attempt >= self.attempts:
            return None
        unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        return self._pause(attempt) if unsent or call.retry else None

    def after_response(self, call: Call[Any], attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before resending after an error answer, or None to raise it."""
        if attempt >= self.attempts:
            return None
        if response.status_code == 429:
            wait = retry_after(response)
            return None if wait is None or wait > self.max_wait else wait
        if response.status_code in RESENT_STATUSES and call.retry:
            return self._pause(attempt)
        return None


class SyncRunner:
    """A client whose operations return their results; ``send`` runs a prepared ``Call``
    (adapters build calls with ``Operations.<name>.build(...)`` once for both clients)."""

    def send(self, call: Call[T]) -> T:
        raise NotImplementedError


class AsyncRunner:
    """A client whose operations return awaitables."""

    async def send(self, call: Call[T]) -> T:
        raise NotImplementedError


class operation(Generic[P, T]):
    """Makes a ``Call``-building function a method of both clients (see the module docstring)."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        functools.update_wrapper(self, build)  # type: ignore[arg-type]

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> operation[P, T]: ...
    @overload
    def __get__(self, obj: SyncRunner, owner: type | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: AsyncRunner, owner: type | None = None) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        build = self.build
        if isinstance(obj, AsyncRunner):

            @functools.wraps(build)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> T:
                return await obj.send(build(*args, **kwargs))

            return run_async
        if not isinstance(obj, SyncRunner):
            raise TypeError("an operation belongs to a LetheClient or an AsyncLetheClient")

        @functools.wraps(build)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            return obj.send(build(*args, **kwargs))

        return run
