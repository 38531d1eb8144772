"""What the client raises: one tree, one class per problem status the server answers with.

Every error is a ``LetheError``. A server answer that is not a success is an RFC 9457
problem, raised as the ``ProblemError`` subclass of its status; the server's problems
never hold memory content, subject ids or tokens, and neither do these exceptions. The
tree (status in brackets)::

    LetheError                  base class
    ├── TransportError          no answer: the connection failed or timed out (after retries)
    ├── UnexpectedResponse      an answer the client cannot read (not the Lethe API?)
    └── ProblemError            the server answered with a problem: status, title, detail, type
        ├── InvalidRequest      [400, 422] the request is malformed; ``errors`` lists the fields,
        │                       ``forbidden_class`` the data policy's class a write fell in
        ├── Unauthenticated     [401] no token, or one unknown, expired or revoked
        ├── OutOfScope          [403] the token's role or scope does not allow this
        ├── NotFound            [404] unknown, or outside the token's scope (indistinguishable)
        ├── Conflict            [409] version, legal hold, erasure fence, idempotency key reuse
        ├── TooLarge            [413] the request body or content is over the server's limit
        ├── RateLimited         [429] over the token's rate limit; ``retry_after`` in seconds
        ├── ServerError         [500, other 5xx] the server failed
        └── Unavailable         [503] the database or the KMS is unavailable; try again later

``problem_error(response)`` picks the class; a status with no class of its own becomes a
plain ``ProblemError`` (4xx) or ``ServerError`` (5xx).
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx


class LetheError(Exception):
    """Base of everything the client raises."""


class TransportError(LetheError):
    """No answer from the server: connection refused, reset or timed out (after any retries)."""


class UnexpectedResponse(LetheError):
    """The server's answer is not what the Lethe API sends (a proxy's error page, say)."""


class ProblemError(LetheError):
    """The server refused the request with an RFC 9457 problem."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        type: str = "about:blank",
        instance: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        forbidden_class: str | None = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}")
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.instance = instance
        self.errors = errors or []
        # A 422 "Forbidden content": the class of the server's data policy the write fell in.
        self.forbidden_class = forbidden_class


class InvalidRequest(ProblemError):
    """400 or 422: nothing was done; ``errors`` names the fields (never their values)."""


class Unauthenticated(ProblemError):
    """401: the token is missing, unknown, expired or revoked (one error for all)."""


class OutOfScope(ProblemError):
    """403: the token's role, purposes or the policy table do not allow this."""


class NotFound(ProblemError):
    """404: unknown, or another tenant's or agent's (the server does not say which)."""


class Conflict(ProblemError):
    """409: stale ``expected_version``, a legal hold, a forgotten subject, a reused key; see ``type``."""


class TooLarge(ProblemError):
    """413: the body or the content is over the server's limit."""


class RateLimited(ProblemError):
    """429: over a rate limit; ``retry_after`` is the server's wait in seconds (None if not given)."""

    def __init__(self, *args: Any, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class ServerError(ProblemError):
    """500 or another 5xx: the server failed; its log has the request id."""


class Unavailable(ServerError):
    """503: the database or the KMS cannot be reached; the request may succeed later."""


BY_STATUS: dict[int, type[ProblemError]] = {
    400: InvalidRequest,
    401: Unauthenticated,
    403: OutOfScope,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    422: InvalidRequest,
    429: RateLimited,
    503: Unavailable,
}


def retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds (the server sends delta-seconds), if readable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def problem_error(response: httpx.Response) -> ProblemError:
    """The exception for an error answer, read from its problem body (or its status alone)."""
    status = response.status_code
    body: dict[str, Any] = {}
    with contextlib.suppress(ValueError):
        parsed = response.json()
        if isinstance(parsed, dict):
            body = parsed
    cls = BY_STATUS.get(status) or (ServerError if status >= 500 else ProblemError)
    title = str(body.get("title") or response.reason_phrase or "Error")
    detail = str(body.get("detail") or title)
    errors = body.get("errors") if isinstance(body.get("errors"), list) else None
    extra: dict[str, Any] = {"retry_after": retry_after(response)} if cls is RateLimited else {}
    return cls(
        status,
        title,
        detail,
        type=str(body.get("type") or "about:blank"),
        instance=body.get("instance"),
        errors=errors,
        forbidden_class=body.get("forbidden_class") if isinstance(body.get("forbidden_class"), str) else None,
        **extra,
    )
