"""``LetheClient``: the blocking client (httpx.Client underneath).

Exceptions: the ``lethe.client.errors`` tree (see ``lethe.client.operations``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx

from lethe.client.base import answer, masked, no_answer, request_args, resolve
from lethe.client.calls import Call, Retries, SyncRunner
from lethe.client.operations import Operations

T = TypeVar("T")


class LetheClient(SyncRunner, Operations):
    """The Lethe HTTP API, one method per operation; use as a context manager or ``close()``.

    ``token`` defaults to ``LETHE_TOKEN`` and ``base_url`` to ``LETHE_URL``. ``retries``
    resends only what is safe to resend (``lethe.client.calls``). ``transport`` replaces
    the network (tests, or an in-process app). ``session_id``: the agent's session, sent as the
    ``Lethe-Session`` header with every request; once the session is tainted (it wrote a web page
    or tool result, was served an untrusted item, or ``taint_session`` marked it) its writes are
    quarantined until a reviewer promotes them.
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
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = resolve(base_url, token, timeout, headers, session_id)
        self._retries = retries or Retries()
        self._http = httpx.Client(
            base_url=self._settings.base_url,
            headers=self._settings.headers,
            timeout=self._settings.timeout,
            transport=transport,
        )

    def send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(**request_args(call))
            except httpx.TransportError as exc:
                wait = self._retries.after_error(call, attempt, exc)
                if wait is None:
                    raise no_answer(call, exc) from exc
            else:
                wait = None if response.is_success else self._retries.after_response(call, attempt, response)
                if wait is None:
                    return answer(call, response)
            time.sleep(wait)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LetheClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LetheClient({masked(self._settings)})"
