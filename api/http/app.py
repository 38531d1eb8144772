"""The HTTP application: ``create_app(settings)`` wires routes, errors, limits, metrics, logs.

Nothing is built at import time. The lifespan builds the ``Container`` (through
``api.bootstrap.build``), wraps its KMS in the timing proxy, and runs the background
work: a periodic expiry sweep and, when the build has an erasure service, its job
runner. Shutdown stops the loops (letting a run in progress finish) and closes the
container.

Middleware, outermost first: request context and access log (``api.logging``), then
the body limits, which read the body stream themselves so a missing or lying
``Content-Length`` cannot get past them: at most ``max_body_bytes`` (413), all of it
within ``body_read_timeout_seconds`` (408), so a half-sent body cannot hold a request
open forever.

Exceptions: ``RuntimeError`` at creation if a ``/v1`` route has no entry in
``api.auth.ROUTE_ROLES`` (access policy must be complete); ``ValueError`` for an
unparsable rate limit. At run time every error is a problem response (``api.problems``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lethe.api.bootstrap import Container, build
from lethe.api.http import problems
from lethe.api.http.auth import ROUTE_ROLES, RateLimiter
from lethe.api.http.logging import RequestContextMiddleware
from lethe.api.http.metrics import InstrumentedKms, Metrics
from lethe.api.http.routes import audit, erasure, health, memories, tokens
from lethe.api.settings import Settings
from lethe.api.store_lease import serve_lease
from lethe.vault.access.tokens import TokenService

log = logging.getLogger("lethe.api")
Job = Callable[[], int]  # a unit of background work; returns how much it did

DESCRIPTION = """A crypto-shredding privacy vault for the long-term memory of AI agents.

Authenticate with `Authorization: Bearer <token>`. A token's role and scope (tenant,
agent, purposes) are the caller's whole authority: request bodies never name a tenant
or an agent. Errors are RFC 9457 `application/problem+json`."""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings if settings is not None else Settings()
    metrics = Metrics()
    limiter = RateLimiter(settings.rate_limit)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        container = build(settings)
        lease = serve_lease(settings.data_dir, container.uow.engine)  # restore/migrate wait for us
        instrument_kms(container, metrics)
        app.state.container = container
        app.state.tokens = TokenService(container.uow)
        work = BackgroundWork()
        work.every(
            settings.sweep_interval_seconds,
            "expiry_sweep",
            container.memories.sweep_expired,
            metrics.expirations.inc,
        )
        erasure_service = getattr(container, "erasure", None)
        if erasure_service is not None and hasattr(erasure_service, "run_pending"):
            work.every(
                settings.erasure_interval_seconds,
                "erasure_runner",
                erasure_service.run_pending,
                metrics.forget_completions.inc,
            )
        work.every(
            settings.compaction_interval_seconds,
            "compaction",
            lambda: container.compactor.compact().events_rewritten,
            lambda n: None,
        )
        try:
            yield
        finally:
            await work.stop()
            container.close()
            lease.release()

    app = FastAPI(
        title="Lethe",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.rate_limiter = limiter
    app.state.auth_failure_limiter = RateLimiter(
        settings.auth_failure_rate_limit, "failed authentication from this address"
    )
    problems.install(app)
    routers = [m.router for m in (health, memories, erasure, tokens, audit)]
    check_route_roles(routers)
    for router in routers:
        app.include_router(router)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        read_timeout=settings.body_read_timeout_seconds,
    )
    app.add_middleware(RequestContextMiddleware)  # added last: outermost
    app.openapi = lambda: openapi_schema(app)  # type: ignore[method-assign]
    return app


def instrument_kms(container: Container, metrics: Metrics) -> None:
    """Put the timing proxy in front of the KMS everywhere the container handed it out."""
    raw = container.kms
    proxy = InstrumentedKms(raw, metrics)
    container.kms = proxy
    for service in vars(container).values():
        if getattr(service, "kms", None) is raw:
            service.kms = proxy


def check_route_roles(routers: list[APIRouter]) -> None:
    """Fail at start-up, not in production, if a route is missing from the policy table."""
    names = {
        r.name
        for router in routers
        for r in router.routes
        if isinstance(r, APIRoute) and r.path.startswith("/v1/")
    }
    missing, stale = names - ROUTE_ROLES.keys(), ROUTE_ROLES.keys() - names
    if missing or stale:
        raise RuntimeError(f"ROUTE_ROLES out of date: missing {sorted(missing)}, stale {sorted(stale)}")


def openapi_schema(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema plus the ``Problem`` component the error responses refer to."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        problem = problems.Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(problem.pop("$defs", {}))
        components["Problem"] = problem
        app.openapi_schema = schema
    return app.openapi_schema


class BackgroundWork:
    """Periodic jobs on the event loop, run in worker threads; failures are logged and retried."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def every(self, seconds: float, name: str, fn: Job, on_result: Callable[[int], Any]) -> None:
        self._tasks.append(asyncio.create_task(self._loop(seconds, name, fn, on_result), name=name))

    async def _loop(self, seconds: float, name: str, fn: Job, on_result: Callable[[int], Any]) -> None:
        while not self._stop.is_set():
            try:
                n = await asyncio.to_thread(fn)
                if n:
                    on_result(n)
                    log.info("background task did work", extra={"task": name, "count": n})
            except Exception as exc:
                # The type only: messages of storage errors can quote parameters.
                log.warning("background task failed", extra={"task": name, "error": type(exc).__name__})
            with suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=seconds)

    async def stop(self, grace: float = 10.0) -> None:
        """Ask the loops to stop, let a run in progress finish, cancel what overstays."""
        self._stop.set()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


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
        if body is None:  # the client went away
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
