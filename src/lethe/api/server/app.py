"""The HTTP application: ``create_app(settings)`` wires routes, errors, limits, metrics, logs.

Nothing is built at import time. The lifespan builds the ``Container`` (through
``api.bootstrap.build``), wraps its KMS in the timing proxy, and runs the background
work (``api.http.background``): a periodic expiry sweep, the erasure job runner and
compaction. Shutdown stops the loops (letting a run in progress finish) and closes the
container.

Middleware, outermost first: request context and access log (``api.http.logging``),
then the body limits (``api.http.middleware``). With the MCP SDK installed, ``/mcp`` and
its OAuth protected-resource metadata are routed too, the SDK loaded on their first request
(``api.mcp.on_demand``, then ``api.mcp.http``).

Exceptions: ``RuntimeError`` at creation if a ``/v1`` route has no entry in
``api.http.auth.ROUTE_ROLES`` (access policy must be complete); ``ValueError`` for an
unparsable rate limit. At run time every error is a problem response (``api.http.problems``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from lethe.api.bootstrap import build
from lethe.api.console.app import mount_console
from lethe.api.http import allocator, problems
from lethe.api.http.auth import ROUTE_ROLES, RateLimiter
from lethe.api.http.background import start_server_work
from lethe.api.http.docs import install_docs
from lethe.api.http.html_headers import HtmlHeadersMiddleware
from lethe.api.http.logging import RequestContextMiddleware, configure_logging
from lethe.api.http.metrics import InstrumentedKms, Metrics
from lethe.api.http.middleware import BodyLimitMiddleware
from lethe.api.http.routes import (
    audit,
    erasure,
    health,
    memories,
    review,
    sessions,
    subject_access,
    tokens,
    webhooks,
)
from lethe.api.http.subject_sweeps import SubjectSweeps
from lethe.api.http.verify_page import install_verifier
from lethe.api.http.wheels import install_wheels
from lethe.api.mcp.on_demand import OnDemandMcp, sdk_installed
from lethe.api.settings import Settings
from lethe.api.store_lease import serve_lease

DESCRIPTION = """A crypto-shredding privacy vault for the long-term memory of AI agents.

Authenticate with `Authorization: Bearer <token>`. A token's role and scope (tenant,
agent, purposes) are the caller's whole authority: request bodies never name a tenant
or an agent. Errors are RFC 9457 `application/problem+json`."""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings if settings is not None else Settings()
    metrics = Metrics()
    limiter = RateLimiter(settings.rate_limit, storage_uri=settings.rate_limit_storage)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        container = build(settings, wrap_kms=lambda kms: InstrumentedKms(kms, metrics))
        lease = serve_lease(settings.data_dir, container.uow.engine)  # restore/migrate wait for us
        app.state.container = container
        container.memories.data_policy.warm()  # not on the first write
        app.state.tokens = container.tokens
        app.state.store_lease = lease
        metrics.kpis.source = container.kpis.store_wide
        metrics.plaintext.keyring = container.keyring
        work = start_server_work(container, settings, metrics, lease)
        try:
            async with running_mcp():
                yield
        finally:
            await work.stop()
            metrics.kpis.source = None
            metrics.plaintext.keyring = None
            container.close()
            lease.release()

    app = FastAPI(
        title="Lethe",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served from installed assets by api.http.docs, not a CDN
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.rate_limiter = limiter
    app.state.search_limiter = anyio.CapacityLimiter(settings.searches_at_once)
    app.state.auth_failure_limiter = RateLimiter(
        settings.auth_failure_rate_limit,
        "failed authentication from this address",
        storage_uri=settings.rate_limit_storage,
    )
    app.state.subject_sweeps = SubjectSweeps(
        settings.subject_sweep_rate_limit,
        settings.subject_sweep_tenant_rate_limit,
        lambda tenant: app.state.container.pseudonyms.tenant_secret(tenant, "subject-sweep"),
        storage_uri=settings.rate_limit_storage,
    )
    problems.install(app, metrics)
    install_docs(app)
    install_verifier(app)
    install_wheels(app)
    mount_console(app)
    modules = (health, memories, sessions, review, erasure, subject_access, tokens, audit, webhooks)
    routers = [m.router for m in modules]
    check_route_roles(routers)
    for router in routers:
        app.include_router(router)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        read_timeout=settings.body_read_timeout_seconds,
    )
    app.add_middleware(HtmlHeadersMiddleware)  # every text/html answer, the console's included
    app.add_middleware(RequestContextMiddleware)  # added last: outermost
    running_mcp = mount_optional_mcp(app, settings)
    app.openapi = lambda: openapi_schema(app)  # type: ignore[method-assign]
    return app


def create_app_from_environment() -> FastAPI:
    """The app of one ``lethe serve --workers N`` process: settings and logging from ``LETHE_*``."""
    allocator.tune()  # first, before the request threads take their arenas
    settings = Settings()
    configure_logging(settings.log_level)
    return create_app(settings)


def mount_optional_mcp(app: FastAPI, settings: Settings) -> Callable[[], AbstractAsyncContextManager[None]]:
    """``/mcp`` when the MCP SDK is installed (``lethe-vault[mcp]``), loaded on its first
    request (``api.mcp.on_demand``); the context the lifespan holds open while serving."""
    if not sdk_installed():
        log = logging.getLogger("lethe.api")
        log.info("MCP SDK not installed: /mcp is off (install the mcp extra: docs/agents.md)")
        return nullcontext
    mcp = OnDemandMcp(app, settings)
    mcp.install()
    return mcp.running


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
