"""The webhooks page: the tenant's endpoints, their recent deliveries and each attempt.

For admins and privacy officers (the API's ``list_webhooks``). Each attempt shows its status
code, outcome and time, never a response body; a delivery can be sent again (the API's
replay: same ``webhook-id``). Subscribing stays with the API, whose answer carries the secret.

Exceptions: core errors become error pages (``api.console.app``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response

from lethe.api.console.render import page
from lethe.api.console.session import Act, User, acting, container, viewing
from lethe.api.http.routes.deps import ResourceId

router = APIRouter()
SHOWN = 20  # deliveries per endpoint on the page


@router.get("/webhooks")
def webhooks(request: Request, user: Annotated[User, Depends(viewing("list_webhooks"))]) -> Response:
    service = container(request).webhooks
    endpoints = [(e, service.deliveries(user.caller, e.id, limit=SHOWN)) for e in service.list(user.caller)]
    return page(request, user, "webhooks.html", endpoints=endpoints, title="Webhooks")


@router.post("/webhooks/{webhook_id}/deliveries/{delivery_id}/replay")
def replay(
    request: Request,
    webhook_id: ResourceId,
    delivery_id: ResourceId,
    act: Annotated[Act, Depends(acting("replay_webhook_delivery"))],
) -> Response:
    container(request).webhooks.replay(act.user.caller, webhook_id, delivery_id)
    return RedirectResponse("/console/webhooks", status_code=303)
