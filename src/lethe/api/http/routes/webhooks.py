"""Webhook subscriptions of a tenant: subscribe, list, delete, deliveries and replay.

For the tenant's admins and privacy officers (``auth.ROUTE_ROLES``). The signing secret is in
the subscription's answer only (``Cache-Control: no-store``). Another tenant's endpoint or
delivery is a 404, like an unknown one.

Exceptions: ``OutOfScope`` (403), ``NotFound`` (404), ``InvalidCommand`` (422: an unknown
event type, a malformed secret, a destination the deployment refuses), ``FeatureUnavailable``
(501: the ``webhooks`` extra is not installed).
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import ContainerDep, ResourceId
from lethe.api.http.schemas.webhooks import (
    DeliveryList,
    WebhookCreate,
    WebhookCreated,
    WebhookList,
    WebhookOut,
)

router = APIRouter(prefix="/v1/admin/webhooks", tags=["admin"])


@router.post(
    "",
    name="create_webhook",
    status_code=201,
    response_model=WebhookCreated,
    responses=problem_responses(401, 403, 413, 422, 429, 501, 503),
)
def create_webhook(
    body: WebhookCreate, caller: CallerDep, container: ContainerDep, response: Response
) -> WebhookCreated:
    """Subscribe an endpoint; the answer is the only place its secret ever appears."""
    endpoint, secret = container.webhooks.subscribe(caller, body.url, body.events, body.secret)
    response.headers["Cache-Control"] = "no-store"
    return WebhookCreated(**WebhookOut.from_domain(endpoint).model_dump(), secret=secret)


@router.get(
    "", name="list_webhooks", response_model=WebhookList, responses=problem_responses(401, 403, 429, 503)
)
def list_webhooks(caller: CallerDep, container: ContainerDep) -> WebhookList:
    """The tenant's endpoints, oldest first (never their secrets)."""
    return WebhookList(items=[WebhookOut.from_domain(e) for e in container.webhooks.list(caller)])


@router.delete(
    "/{webhook_id}",
    name="delete_webhook",
    status_code=204,
    response_class=Response,
    responses=problem_responses(401, 403, 404, 422, 429, 503),
)
def delete_webhook(webhook_id: ResourceId, caller: CallerDep, container: ContainerDep) -> Response:
    """Unsubscribe: nothing more is sent to it; its deliveries' records go with it."""
    container.webhooks.delete(caller, webhook_id)
    return Response(status_code=204)


@router.get(
    "/{webhook_id}/deliveries",
    name="list_webhook_deliveries",
    response_model=DeliveryList,
    responses=problem_responses(401, 403, 404, 422, 429, 503),
)
def list_webhook_deliveries(
    webhook_id: ResourceId, caller: CallerDep, container: ContainerDep
) -> DeliveryList:
    """The endpoint's newest deliveries first, with each attempt's status code and time."""
    return DeliveryList.from_domain(container.webhooks.deliveries(caller, webhook_id))


@router.post(
    "/{webhook_id}/deliveries/{delivery_id}/replay",
    name="replay_webhook_delivery",
    status_code=202,
    response_class=Response,
    responses=problem_responses(401, 403, 404, 422, 429, 501, 503),
)
def replay_webhook_delivery(
    webhook_id: ResourceId, delivery_id: ResourceId, caller: CallerDep, container: ContainerDep
) -> Response:
    """Send the delivery again soon, with the same webhook-id (the worker picks it up)."""
    container.webhooks.replay(caller, webhook_id, delivery_id)
    return Response(status_code=202)
