"""Liveness, readiness and metrics: unauthenticated, for orchestrators and scrapers.

Exceptions: readiness answers 503 (a problem) when the database or the KMS fails.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request, Response

from api.problems import ApiProblem, problem_responses
from api.routes.deps import ContainerDep, MetricsDep
from api.schemas import Health

router = APIRouter(tags=["health"])
log = logging.getLogger("lethe.api")


@router.get("/healthz", name="healthz", response_model=Health)
def healthz() -> Health:
    """The process is up (says nothing about its dependencies)."""
    return Health(status="ok")


@router.get("/readyz", name="readyz", response_model=Health, responses=problem_responses(503))
def readyz(container: ContainerDep) -> Health:
    """Ready to serve: the database answers and the KMS is healthy."""
    checks = (("database", container.uow.ping), ("key management service", container.kms.health))
    for what, check in checks:
        try:
            check()
        except Exception as exc:
            log.warning("readiness check failed", extra={"task": what, "error": type(exc).__name__})
            raise ApiProblem(503, "Service unavailable", f"{what} unavailable") from None
    return Health(status="ready")


@router.get(
    "/metrics",
    name="metrics",
    response_class=Response,
    responses={200: {"description": "Prometheus text format", "content": {"text/plain": {}}}},
)
def metrics(request: Request, m: MetricsDep) -> Response:
    return Response(m.render(), media_type=m.content_type)
