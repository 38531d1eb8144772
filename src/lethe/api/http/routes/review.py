"""Reviewer and privacy-officer endpoints: the review queue, promote and reject, retention
confirmations, retractions.

Exceptions: core errors propagate to the problem handlers (see ``vault.errors``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Response

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import ContainerDep, IdempotencyHeader, MetricsDep, ResourceId
from lethe.api.http.schemas.common import one_idempotency_key
from lethe.api.http.schemas.memories import MemoryOut
from lethe.api.http.schemas.review import (
    PromoteIn,
    RejectIn,
    RetentionIn,
    RetractionIn,
    RetractionOut,
    ReviewItemOut,
    ReviewQueueOut,
)
from lethe.vault.memory.review import MAX_AGE, MAX_PAGE, QueueQuery
from lethe.vault.model import SourceType

router = APIRouter(tags=["review"])

OlderThan = Annotated[
    int | None,
    Query(ge=0, le=int(MAX_AGE.total_seconds()), description="Only items at least this many seconds old"),
]
Cursor = Annotated[
    str | None,
    Query(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_-]+$", description="The next_cursor of a page"),
]


@router.get(
    "/v1/review-queue",
    name="list_review_queue",
    response_model=ReviewQueueOut,
    responses=problem_responses(401, 403, 422, 429, 503),
)
def list_review_queue(
    caller: CallerDep,
    container: ContainerDep,
    agent_id: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
    purpose: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    source_type: SourceType | None = None,
    older_than: OlderThan = None,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
) -> ReviewQueueOut:
    """The quarantined memories of the tenant, oldest first, decrypted, with their provenance."""
    query = QueueQuery(
        agent_id=agent_id,
        purpose=purpose,
        source_type=source_type,
        older_than=timedelta(seconds=older_than) if older_than is not None else None,
        cursor=cursor,
        limit=limit,
    )
    return ReviewQueueOut.from_domain(container.review.queue(caller, query))


@router.get(
    "/v1/review-queue/{memory_id}",
    name="get_review_item",
    response_model=ReviewItemOut,
    responses=problem_responses(401, 403, 404, 422, 429, 503),
)
def get_review_item(memory_id: ResourceId, caller: CallerDep, container: ContainerDep) -> ReviewItemOut:
    """One quarantined memory of the tenant, decrypted, with the session taint that put it there."""
    return ReviewItemOut.from_domain(container.review.get(caller, memory_id))


@router.post(
    "/v1/memories/{memory_id}/promote",
    name="promote_memory",
    response_model=MemoryOut,
    responses=problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
)
def promote_memory(
    memory_id: ResourceId,
    body: PromoteIn,
    caller: CallerDep,
    container: ContainerDep,
    metrics: MetricsDep,
    idempotency_key: IdempotencyHeader = None,
) -> MemoryOut:
    """Release a quarantined memory: active and verified. A retried key returns the first result."""
    key = one_idempotency_key(body.idempotency_key, idempotency_key)
    decision = container.review.promote(caller, memory_id, body.expected_version, key, body.reason)
    if decision.first:
        metrics.promotions.inc()
    return MemoryOut.from_domain(decision.item)


@router.post(
    "/v1/memories/{memory_id}/reject",
    name="reject_memory",
    response_model=MemoryOut,
    responses=problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
)
def reject_memory(
    memory_id: ResourceId,
    body: RejectIn,
    caller: CallerDep,
    container: ContainerDep,
    idempotency_key: IdempotencyHeader = None,
) -> MemoryOut:
    """Retract a quarantined memory (and the summaries citing it). A retried key returns the first result."""
    key = one_idempotency_key(body.idempotency_key, idempotency_key)
    decision = container.review.reject(caller, memory_id, body.expected_version, body.reason, key)
    return MemoryOut.from_domain(decision.item)


@router.post(
    "/v1/memories/{memory_id}/retention",
    name="confirm_retention",
    response_model=MemoryOut,
    responses=problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
)
def confirm_retention(
    memory_id: ResourceId, body: RetentionIn, caller: CallerDep, container: ContainerDep
) -> MemoryOut:
    """Keep an active memory longer than its source allows (a reviewer's confirmation; never its writer)."""
    ttl = timedelta(seconds=body.ttl_seconds) if body.ttl_seconds is not None else None
    item = container.retention.confirm(caller, memory_id, body.expected_version, ttl)
    return MemoryOut.from_domain(item)


@router.post(
    "/v1/retractions",
    name="retract_memories",
    status_code=202,
    response_model=RetractionOut,
    responses={
        200: {"model": RetractionOut, "description": "A dry run: what would be retracted; nothing changed"},
        **problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
    },
)
def retract_memories(
    body: RetractionIn, caller: CallerDep, container: ContainerDep, response: Response
) -> RetractionOut:
    """Retract one memory, or every memory written from one source, with the summaries built on them."""
    result = container.retractions.retract(
        caller, memory_id=body.memory_id, source_ref=body.source_ref, reason=body.reason, dry_run=body.dry_run
    )
    if result.dry_run:
        response.status_code = 200
    return RetractionOut.from_domain(result)
