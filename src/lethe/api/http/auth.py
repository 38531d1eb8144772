"""Authentication, authorisation and rate limiting, in one place.

``ROUTE_ROLES`` is the whole access policy of the HTTP API: route name -> the roles
that may call it. Every authenticated route calls ``authorised``, as a dependency or, on
the agents' hot routes, in the thread of the route's work (``authorised_then``), which
1. reads the bearer token and turns it into a ``Caller`` (401 if missing or not valid),
2. looks the matched route up in ``ROUTE_ROLES`` (403 if the role is not listed; a
   route missing from the table is refused for everyone: fail closed),
3. charges one request to the token's rate limit (429 with ``Retry-After``).
A failed authentication (no token, or one that is not valid) is charged to its client
address instead, and past that limit the answer is 429 rather than 401, given before the
token is looked up: bad tokens must not buy a database lookup each by the thousand.
Successful requests are never charged to the address, and a token this process accepted
before is looked up and served even from an address past its limit, so agents at work
keep working from a noisy address (behind a shared NAT, say); a token it has not seen is
refused there until the window passes. Guessing one is hopeless anyway (256 random bits).
The caller's scope (tenant, agent, purposes) comes only from the token. Search and write
(``recalled_then``) skip step 1's lookup for a token their process accepted before, and read
the token's revocation with their work's own first statement instead.

Exceptions: ``Unauthenticated`` (401), ``OutOfScope`` (403), ``ApiProblem`` (429).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, NoReturn, TypeVar

import anyio
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from limits import parse
from limits.errors import StorageError
from limits.storage import MemoryStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from starlette.datastructures import State

from lethe.api.http.logging import request_context
from lethe.api.http.problems import ApiProblem
from lethe.vault.access.known_tokens import REFUSAL
from lethe.vault.access.tokens import well_formed
from lethe.vault.errors import OutOfScope, Unauthenticated
from lethe.vault.model import Caller, Role

AGENT = frozenset({Role.AGENT})
WRITERS = frozenset({Role.AGENT, Role.OPERATOR})  # an operator writes operator_config memories
REVIEWER = frozenset({Role.REVIEWER})
RETRACTORS = frozenset({Role.REVIEWER, Role.PRIVACY_OFFICER})
PRIVACY_OFFICER = frozenset({Role.PRIVACY_OFFICER})
OVERSIGHT = frozenset({Role.PRIVACY_OFFICER, Role.AUDITOR})
AUDITOR = frozenset({Role.AUDITOR})
ADMIN = frozenset({Role.ADMIN})
EVERY_ROLE = frozenset(Role)
WEBHOOK_ADMINS = frozenset({Role.ADMIN, Role.PRIVACY_OFFICER})  # a tenant's admin or its privacy officer

ROUTE_ROLES: dict[str, frozenset[Role]] = {
    "write_memory": WRITERS,
    "get_memory": AGENT,
    "search_memories": AGENT,
    "list_memories": AGENT,
    "delete_memory": AGENT,
    "taint_session": AGENT,
    "list_review_queue": REVIEWER,
    "get_review_item": REVIEWER,
    "promote_memory": REVIEWER,
    "reject_memory": REVIEWER,
    "confirm_retention": REVIEWER,
    "retract_memories": RETRACTORS,
    "request_erasure": PRIVACY_OFFICER,
    "list_erasure_requests": OVERSIGHT,
    "get_erasure_request": OVERSIGHT,
    "extend_erasure_request": PRIVACY_OFFICER,
    "pause_erasure_request": PRIVACY_OFFICER,
    "resume_erasure_request": PRIVACY_OFFICER,
    "list_legal_holds": PRIVACY_OFFICER,
    "place_legal_hold": PRIVACY_OFFICER,
    "lift_legal_hold": PRIVACY_OFFICER,
    "reinstate_subject": PRIVACY_OFFICER,
    "request_subject_access": PRIVACY_OFFICER,
    "create_token": ADMIN,
    "list_tokens": ADMIN,
    "revoke_token": ADMIN,
    "whoami": EVERY_ROLE,
    "create_webhook": WEBHOOK_ADMINS,
    "list_webhooks": WEBHOOK_ADMINS,
    "delete_webhook": WEBHOOK_ADMINS,
    "list_webhook_deliveries": WEBHOOK_ADMINS,
    "replay_webhook_delivery": WEBHOOK_ADMINS,
    "get_audit_checkpoint": AUDITOR,
    "get_audit_kpis": AUDITOR,
    "get_audit_public_key": AUDITOR,
    "get_audit_public_key_pem": AUDITOR,
    "get_inclusion_proof": AUDITOR,
    "get_consistency_proof": AUDITOR,
    "list_audit_forks": OVERSIGHT,
    "get_erasure_report": OVERSIGHT,
}

T = TypeVar("T")
log = logging.getLogger("lethe.api")
_bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer lethe_...`")


class RateLimiter:
    """A moving-window limit per key (a token id or a client address), counted in the
    ``limits`` storage named by ``storage_uri``: ``memory://`` counts in this process only;
    ``redis://host:port/db`` makes every node of a deployment share one count.
    ``what`` names the limited thing in the 429.

    If the shared storage cannot be reached the request is refused with a 503 (fail
    closed): a limit that lapses whenever Redis stalls would let a token guesser through.
    """

    def __init__(self, spec: str, what: str = "this token", storage_uri: str = "memory://") -> None:
        self.spec = spec
        self.what = what
        self.item = parse(spec)
        self.namespace = what  # two limiters sharing one Redis never mix their counts
        self.limiter = MovingWindowRateLimiter(limit_storage(storage_uri))

    def charge(self, key: str) -> None:
        """Count one request for ``key``; ``ApiProblem`` 429 past the limit (503: storage down)."""
        if not self.hit(key):
            raise self._over(key)

    def hit(self, key: str) -> bool:
        """Count one request for ``key``; whether it was within the limit (nothing raised)."""
        with self._storage_guard():
            return bool(self.limiter.hit(self.item, self.namespace, key))

    def check(self, key: str) -> None:
        """Refuse (429) a ``key`` already at its limit, without counting this request: so a
        caller can shed work before doing it, and charge only what failed."""
        if not self.admits(key):
            self.refuse(key)

    def admits(self, key: str) -> bool:
        """Whether one more request for ``key`` stays within the limit (charges nothing)."""
        with self._storage_guard():
            return bool(self.limiter.test(self.item, self.namespace, key))

    def refuse(self, key: str) -> NoReturn:
        """The 429 for ``key``, with the seconds until its window frees a request."""
        raise self._over(key)

    def _over(self, key: str) -> ApiProblem:
        with self._storage_guard():
            reset = self.limiter.get_window_stats(self.item, self.namespace, key).reset_time
        retry_after = max(1, math.ceil(reset - time.time()))
        return ApiProblem(
            429,
            "Too many requests",
            f"{self.what} is limited to {self.spec}",
            {"Retry-After": str(retry_after)},
        )

    @contextmanager
    def _storage_guard(self) -> Iterator[None]:
        try:
            yield
        except StorageError as exc:
            # The exception's text can name the storage's address; the type is enough.
            log.warning("rate limit storage failed", extra={"error": type(exc.storage_error).__name__})
            raise ApiProblem(
                503, "Service unavailable", "the rate limit storage is unreachable", {"Retry-After": "1"}
            ) from None

    def reachable(self) -> bool:
        """Whether the storage answers (always, in memory)."""
        try:
            return bool(self.limiter.storage.check())
        except Exception:  # the storage's own error types vary by backend
            return False


def limit_storage(uri: str) -> Storage:
    """The ``limits`` storage for ``uri``; a shared one raises ``StorageError`` when unreachable."""
    if uri.startswith("memory://"):
        return MemoryStorage()
    # Short timeouts: a stalled Redis must cost a request a fraction of a second, not a hang.
    options = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5} if uri.startswith("redis") else {}
    return storage_from_string(uri, wrap_exceptions=True, **options)


def authorised(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    """The caller behind the request, if its token allows the matched route."""
    if credentials is None:
        _charge_failure(request)  # 429 once over the limit
        raise Unauthenticated("a bearer token is required")
    caller = _authenticate(request, credentials.credentials)
    _admit(request, caller)
    return caller


def _admit(request: Request, caller: Caller) -> None:
    """What follows a caller's authentication: the access log learns its token id, and
    ``permit`` checks the route and charges the token's rate limit."""
    ctx = request_context(request.scope)
    if ctx is not None:
        ctx.token_id = caller.principal
    permit(request.app.state, caller, _route_name(request))


def _route_name(request: Request) -> str:
    return getattr(request.scope.get("route"), "name", "")


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _check_failures(request: Request) -> None:
    """429 if the client's address is past its failed-authentication limit (nothing charged)."""
    request.app.state.auth_failure_limiter.check(client_address(request))


def _charge_failure(request: Request) -> None:
    """A failed authentication is charged to its client address (``ApiProblem`` 429 past the limit)."""
    request.app.state.auth_failure_limiter.charge(client_address(request))


async def presented(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> HTTPAuthorizationCredentials:
    """The bearer token of a request to a route that looks it up with its work
    (``authorised_then``). No token, or one not of a token's form, is refused here, before
    the body is validated, as ``authorised`` refuses it (401, or 429 past the failure limit)."""
    if credentials is not None and well_formed(credentials.credentials):
        return credentials
    await anyio.to_thread.run_sync(_charge_failure, request)  # the limit's storage may be Redis
    if credentials is None:
        raise Unauthenticated("a bearer token is required")
    raise Unauthenticated(REFUSAL)


CredentialsDep = Annotated[HTTPAuthorizationCredentials, Depends(presented)]


async def authorised_then(
    request: Request,
    credentials: HTTPAuthorizationCredentials,
    work: Callable[[Caller], T],
    limiter: anyio.CapacityLimiter | None = None,
) -> T:
    """``authorised``, then the route's ``work`` for that caller, in one worker thread.

    For the agents' hot routes (write, read, search). As a dependency, ``authorised`` takes
    a worker thread of its own (its token lookup and rate-limit charge block), and the
    route's work another: two thread hops per request. One hop instead took HTTP search
    from 453 to 593 req/s on 2 workers. The difference a client sees: on these routes a
    token of the right form is looked up after the body is validated, so a request with
    such a token and a body that fails validation is answered 422 (it costs no lookup, and
    is not charged to the failure limit); ``presented`` refuses a missing or malformed
    token first, as before. ``limiter`` bounds the threads the work may hold (default: the
    process's thread pool).
    """
    return await anyio.to_thread.run_sync(lambda: work(authorised(request, credentials)), limiter=limiter)


async def recalled_then(
    request: Request,
    credentials: HTTPAuthorizationCredentials,
    work: Callable[[Caller, bool], T],
    limiter: anyio.CapacityLimiter | None = None,
) -> T:
    """``authorised_then`` for work that reads its token's revocation itself.

    A token this process authenticated before (``TokenService.recall``: its facts never
    change) is not looked up: ``work`` gets its caller and True, and must read the
    revocation with its own first statement and raise ``Unauthenticated`` if revoked, before
    it answers or changes anything (``confirm_token`` of the search and of the write). So
    revocation still takes effect at once; it saves each hot request a statement and a
    connection checkout. That 401 is charged to the failure limit like any other, and the
    token is looked up again from then on. Any other token, or one whose role the route
    refuses, is authenticated first and ``work`` gets False. A request refused before its
    revocation is read (429 over the token's rate limit, 403 for a purpose it lacks) looks
    the token up before it answers: a revoked token is told 401 on these routes as on every
    other.
    """

    def run() -> T:
        tokens = request.app.state.tokens
        token = credentials.credentials
        caller = tokens.recall(token)
        if caller is None or not may(caller.role, _route_name(request)):
            return work(authorised(request, credentials), False)
        try:
            _admit(request, caller)
            return work(caller, True)
        except Unauthenticated:  # the work read the revocation
            tokens.forget(token)
            _charge_failure(request)
            raise
        except (ApiProblem, OutOfScope):
            tokens.forget(token)
            # 401 if it was revoked, else the refusal stands. It was accepted a moment ago:
            # looked up even from an address past its failure limit.
            _authenticate(request, token, shed=False)
            raise

    return await anyio.to_thread.run_sync(run, limiter=limiter)


def _authenticate(request: Request, token: str, shed: bool = True) -> Caller:
    """``TokenService.authenticate``, a failure charged to the client's address.

    From an address past its failure limit, a token this process has not accepted before is
    refused (429) before it is looked up: the limit sheds the lookups, not only the answers.
    One it has accepted is still looked up and served, so a noisy neighbour behind the same
    NAT does not lock out agents already at work (tests/api/test_auth_failure_shedding.py).
    """
    tokens = request.app.state.tokens
    if shed and not tokens.accepted(token):
        _check_failures(request)
    try:
        return tokens.authenticate(token)
    except Unauthenticated:
        _charge_failure(request)
        raise


def may(role: Role, route_name: str) -> bool:
    """Whether ``ROUTE_ROLES`` lets this role call the route (unknown routes: no one)."""
    return role in ROUTE_ROLES.get(route_name, frozenset())


def permit(state: State, caller: Caller, route_name: str) -> None:
    """The access check of the API and of the console alike: the role must be allowed the
    route (the console names the API route each page acts as), and one request is charged
    to the token's rate limit."""
    if not may(caller.role, route_name):
        raise OutOfScope(f"a {caller.role.value} token may not call this endpoint")
    state.rate_limiter.charge(caller.principal)


CallerDep = Annotated[Caller, Depends(authorised)]
