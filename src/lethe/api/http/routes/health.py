"""Liveness, readiness and metrics: unauthenticated, for orchestrators and scrapers.

Exceptions: readiness answers 503 (a problem naming each failed check) when the
database cannot be read or written, the schema is not this release's, the KMS fails, or
the shared rate-limit storage does not answer.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request, Response

from lethe.api.http.problems import ApiProblem, problem_responses
from lethe.api.http.routes.deps import ContainerDep, MetricsDep
from lethe.api.http.schemas.health import Health
from lethe.vault.store.readiness import Check, check_readiness

router = APIRouter(tags=["health"])
log = logging.getLogger("lethe.api")


@router.get("/healthz", name="healthz", response_model=Health)
def healthz() -> Health:
    """The process is up (says nothing about its dependencies)."""
    return Health(status="ok")


@router.get("/readyz", name="readyz", response_model=Health, responses=problem_responses(503))
def readyz(container: ContainerDep, request: Request) -> Health:
    """Ready to serve: the store reads and commits a write, its schema is current, the KMS is
        healthy, and a shared rate-limit storage (Redis) answers. ``semantic recall`` says which
    embedder ranks searches, or why search is lexical only, and ``memories without a vector``
    how many this process last counted waiting for the background fill (neither ever fails
    readiness)."""
    checks = check_readiness(container.uow, container.kms)
    lease = getattr(request.app.state, "store_lease", None)
    if lease is not None and not lease.held:
        checks.append(Check("store lease", False, "lost with the database connection; retaking it"))
    if request.app.state.settings.rate_limit_storage != "memory://":
        ok = request.app.state.rate_limiter.reachable()
        checks.append(Check("rate limit storage", ok, "ok" if ok else "unreachable"))
    # Informational, never a failure: a store without the semantic extra still serves (lexically).
    checks.append(Check("semantic recall", True, container.semantic))
    if container.search.vectors.embedder is not None:  # the background fill's last count
        left = container.vector_fill.remaining
        checks.append(
            Check("memories without a vector", True, "not counted yet" if left is None else str(left))
        )
    failed = [c for c in checks if not c.ok]
    for c in failed:
        log.warning("readiness check failed", extra={"task": c.name, "error": c.detail})
    if failed:
        what = "; ".join(f"{c.name} failed ({c.detail})" for c in failed)
        raise ApiProblem(503, "Service unavailable", f"not ready: {what}")
    return Health(status="ready", checks={c.name: c.detail for c in checks})


@router.get(
    "/metrics",
    name="metrics",
    response_class=Response,
    responses={200: {"description": "Prometheus text format", "content": {"text/plain": {}}}},
)
def metrics(request: Request, m: MetricsDep) -> Response:
    return Response(m.render(), media_type=m.content_type)
