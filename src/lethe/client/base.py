"""What both clients share: where the server is, the token, timeouts, and reading an answer.

The server's address comes from the constructor or ``LETHE_URL`` (default
``http://127.0.0.1:8080``); the bearer token from the constructor or ``LETHE_TOKEN``.
The token goes only into the ``Authorization`` header; it is never part of an
exception, a ``repr`` or a log line.

Exceptions: ``problem_error`` subclasses (via ``answer``); ``TransportError``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from lethe.client.calls import Call
from lethe.client.errors import TransportError, problem_error

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8080"
USER_AGENT = "lethe-client/0.1"


@dataclass(frozen=True)
class Settings:
    """The resolved constructor arguments of a client."""

    base_url: str
    headers: dict[str, str]
    timeout: httpx.Timeout


def resolve(
    base_url: str | None,
    token: str | None,
    timeout: float | httpx.Timeout,
    headers: Mapping[str, str] | None,
    session_id: str | None = None,
) -> Settings:
    url = base_url or os.environ.get("LETHE_URL") or DEFAULT_URL
    token = token if token is not None else os.environ.get("LETHE_TOKEN")
    sent = {"User-Agent": USER_AGENT, **(headers or {})}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    if session_id is not None:  # the agent's session on every request (only writes and searches read it)
        sent["Lethe-Session"] = session_id
    limit = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
    return Settings(url.rstrip("/"), sent, limit)


def request_args(call: Call[Any]) -> dict[str, Any]:
    return {"method": call.method, "url": call.path, "json": call.json, "params": call.params}


def answer(call: Call[T], response: httpx.Response) -> T:
    """The call's result from a success, or the problem's exception."""
    if response.is_success:
        return call.read(response)
    raise problem_error(response)


def no_answer(call: Call[Any], exc: httpx.TransportError) -> TransportError:
    """The error for a request that got no answer (the message names the request, never its body)."""
    return TransportError(f"{call.method} {call.path}: no answer from the server ({type(exc).__name__})")


def masked(settings: Settings) -> str:
    token = "set" if "Authorization" in settings.headers else "unset"
    return f"base_url={settings.base_url!r}, token={token}"
