"""Memory endpoints for agents: write, read, search, list and delete their own (review
decisions are in ``routes.review``).

Exceptions: core errors propagate to the problem handlers (see ``vault.errors``).
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response

from lethe.api.http.auth import CredentialsDep, authorised_then, recalled_then
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import (
    ContainerDep,
    IdempotencyHeader,
    MetricsDep,
    ResourceId,
    SessionHeader,
)
from lethe.api.http.schemas.common import one_session_id
from lethe.api.http.schemas.memories import (
    MemoryListIn,
    MemoryOut,
    MemoryPageOut,
    MemoryWrite,
    SearchIn,
    SearchOut,
)
from lethe.vault.memory.service import WriteOutcome
from lethe.vault.model import Caller, SearchResult, Status

router = APIRouter(prefix="/v1/memories", tags=["memories"])


@router.post(
    "",
    name="write_memory",
    status_code=201,
    response_model=MemoryOut,
    responses={
        200: {"model": MemoryOut, "description": "A retried idempotency key: the first result"},
        **problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
    },
)
async def write_memory(
    body: MemoryWrite,
    credentials: CredentialsDep,
    container: ContainerDep,
    metrics: MetricsDep,
    request: Request,
    response: Response,
    idempotency_key: IdempotencyHeader = None,
    session: SessionHeader = None,
) -> MemoryOut:
    """Store a memory (201), or return the first result of a retried idempotency key (200).
    A write of a tainted session (``Lethe-Session``) is quarantined whatever its source."""

    def write(caller: Caller, recalled: bool) -> WriteOutcome:
        # A token seen before is not looked up: the write reads its revocation (``recalled_then``).
        request.app.state.subject_sweeps.charge(caller, body.subject_id)  # the fence's oracle
        command = body.to_command(idempotency_key)
        session_id = one_session_id(body.session_id, session)
        return container.memories.write(caller, command, confirm_token=recalled, session_id=session_id)

    outcome = await recalled_then(request, credentials, write)
    if outcome.created:
        metrics.writes.inc()
        if outcome.item.status is Status.QUARANTINED:
            metrics.quarantined.inc()
        if outcome.item.supersedes_id:
            metrics.supersessions.inc()
    else:
        response.status_code = 200
    return MemoryOut.from_domain(outcome.item)


@router.get(
    "/{memory_id}",
    name="get_memory",
    response_model=MemoryOut,
    responses=problem_responses(401, 403, 404, 422, 429, 503),
)
async def get_memory(
    memory_id: ResourceId, credentials: CredentialsDep, container: ContainerDep, request: Request
) -> MemoryOut:
    """One memory in the caller's scope; anything else is 404, whoever owns it."""
    item = await authorised_then(
        request, credentials, lambda caller: container.memories.get(caller, memory_id)
    )
    return MemoryOut.from_domain(item)


@router.post(
    "/search",
    name="search_memories",
    response_model=SearchOut,
    responses=problem_responses(401, 403, 413, 422, 429, 503),
)
async def search_memories(
    body: SearchIn,
    credentials: CredentialsDep,
    container: ContainerDep,
    metrics: MetricsDep,
    request: Request,
    session: SessionHeader = None,
) -> SearchOut:
    """Scoped, ranked retrieval within a token budget; a session served an untrusted item is tainted."""

    def search(caller: Caller, recalled: bool) -> tuple[SearchResult, float]:
        start = time.perf_counter()
        query = body.to_query()
        session_id = one_session_id(body.session_id, session)
        result = container.search.search(caller, query, confirm_token=recalled, session_id=session_id)
        return result, time.perf_counter() - start

    # A worker thread of its own, at most ``searches_at_once`` at once (``Settings``): the
    # queue is in the event loop, so waiting searches hold none of the threads other requests
    # use. A token seen before is not looked up: the search reads its revocation (``recalled_then``).
    result, seconds = await recalled_then(request, credentials, search, request.app.state.search_limiter)
    metrics.search_seconds.observe(seconds)
    metrics.search_items.observe(len(result.items))
    return SearchOut.from_domain(result)


@router.post(
    "/list",
    name="list_memories",
    response_model=MemoryPageOut,
    responses=problem_responses(401, 403, 413, 422, 429, 503),
)
async def list_memories(
    body: MemoryListIn, credentials: CredentialsDep, container: ContainerDep, request: Request
) -> MemoryPageOut:
    """The calling agent's own active and quarantined memories, newest first, a page at a time."""
    page = await authorised_then(
        request, credentials, lambda caller: container.own_records.page(caller, body.to_query())
    )
    return MemoryPageOut.from_domain(page)


@router.delete(
    "/{memory_id}",
    name="delete_memory",
    status_code=204,
    response_class=Response,
    responses=problem_responses(401, 403, 404, 422, 429, 503),
)
async def delete_memory(
    memory_id: ResourceId, credentials: CredentialsDep, container: ContainerDep, request: Request
) -> Response:
    """Retract one of the agent's own memories, and the summaries citing it (204, again 204 once
    retracted); anything that is not its own, listed memory is 404."""
    await authorised_then(
        request, credentials, lambda caller: container.retractions.retract_own(caller, memory_id)
    )
    return Response(status_code=204)
