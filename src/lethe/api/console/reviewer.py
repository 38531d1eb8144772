"""Reviewer pages: the quarantine queue, decrypted with its provenance; promote and reject.

Each form carries the memory's version (a stale page is refused with 409, not applied
to a memory someone else already decided) and a fresh idempotency key (a double submit
acts once), exactly what the API's promote and reject take.

Exceptions: core errors become error pages (``api.console.app``).
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from lethe.api.console.render import page
from lethe.api.console.session import Act, User, acting, container, viewing
from lethe.api.http.routes.deps import ResourceId
from lethe.api.http.schemas.numbers import Version, from_form
from lethe.vault.errors import InvalidCommand
from lethe.vault.memory.review import QueueQuery

router = APIRouter()
PAGE_SIZE = 25


@router.get("/review")
def queue(
    request: Request,
    user: Annotated[User, Depends(viewing("list_review_queue"))],
    cursor: Annotated[str | None, Query(max_length=200, pattern=r"^[A-Za-z0-9_-]+$")] = None,
    done: Annotated[str | None, Query(pattern=r"^(promoted|rejected)$")] = None,
) -> Response:
    found = container(request).review.queue(user.caller, QueueQuery(cursor=cursor, limit=PAGE_SIZE))
    keys = {item.id: uuid.uuid4().hex for item in found.items}
    return page(
        request, user, "review.html", page_=found, keys=keys, done=done, cursor=cursor, title="Review queue"
    )


def _version(act: Act) -> int:
    return from_form(
        Version, act.text("expected_version") or "", "the form lost the memory's version; reload the queue"
    )


@router.post("/review/{memory_id}/promote")
def promote(
    request: Request, memory_id: ResourceId, act: Annotated[Act, Depends(acting("promote_memory"))]
) -> Response:
    decision = container(request).review.promote(
        act.user.caller, memory_id, _version(act), act.text("idempotency_key"), act.text("reason")
    )
    if decision.first:
        request.app.state.api.state.metrics.promotions.inc()
    return RedirectResponse("/console/review?done=promoted", status_code=303)


@router.post("/review/{memory_id}/reject")
def reject(
    request: Request, memory_id: ResourceId, act: Annotated[Act, Depends(acting("reject_memory"))]
) -> Response:
    reason = act.text("reason")
    if reason is None:
        raise InvalidCommand("a rejection needs a reason")
    container(request).review.reject(
        act.user.caller, memory_id, _version(act), reason, act.text("idempotency_key")
    )
    return RedirectResponse("/console/review?done=rejected", status_code=303)
