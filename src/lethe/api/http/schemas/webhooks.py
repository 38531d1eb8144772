"""Webhook subscriptions and their deliveries: what an admin sends and is shown.

The secret appears once, in the answer to the subscription; deliveries show each attempt's
status code and time, never a response body.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from lethe.api.http.schemas.common import Out, Strict
from lethe.vault.webhooks.service import Delivery, Endpoint

EventType = Literal[
    "erasure.status_changed", "erasure.reported", "access_export.ready", "request.due_soon", "request.overdue"
]


class WebhookCreate(Strict):
    url: str = Field(min_length=8, max_length=2048, description="http(s) URL the deployment's rule allows.")
    events: list[EventType] = Field(min_length=1, max_length=5)
    secret: str | None = Field(
        default=None,
        min_length=38,
        max_length=100,
        description="Optional 'whsec_' + base64 of 24 to 64 bytes; generated when absent.",
    )


class WebhookOut(Out):
    id: str
    url: str
    events: list[str]
    created_at: datetime
    created_by: str


class WebhookCreated(WebhookOut):
    secret: str = Field(description="The signing secret (Standard Webhooks); shown this once only.")


class WebhookList(BaseModel):
    items: list[WebhookOut]

    @classmethod
    def from_domain(cls, endpoints: Sequence[Endpoint]) -> WebhookList:
        return cls(items=[WebhookOut.from_domain(e) for e in endpoints])


class AttemptOut(Out):
    n: int
    at: datetime
    status_code: int | None = Field(description="The HTTP status; null when no answer came.")
    outcome: str = Field(description="delivered, http_error, refused, timeout or connect_error.")


class DeliveryOut(Out):
    id: str
    webhook_id: str = Field(description="The event's id: the webhook-id header of every try.")
    event_type: str
    state: str = Field(description="pending, delivered or failed.")
    next_attempt_at: datetime | None
    attempts: list[AttemptOut]


class DeliveryList(BaseModel):
    items: list[DeliveryOut]

    @classmethod
    def from_domain(cls, deliveries: Sequence[Delivery]) -> DeliveryList:
        return cls(items=[DeliveryOut.from_domain(d) for d in deliveries])
