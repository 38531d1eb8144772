"""Webhook subscriptions, what was delivered, and replays: the admin's commands.

An admin or privacy officer of a tenant subscribes an endpoint (a URL and event types) and
gets its signing secret (``whsec_`` + base64 of 32 random bytes, Standard Webhooks' form)
once, in the answer; it is kept sealed (AES-256-GCM under a key derived from the server's
pepper, bound to the tenant and the endpoint id). A secret may also be supplied, in the
same form. Deliveries list each attempt's status code and time, never a response body; a
replay sends a delivery again with the same ``webhook-id``.

Exceptions: ``OutOfScope`` (403) for other roles; ``InvalidCommand`` (422) for an unknown
event type, a malformed secret or a URL the deployment refuses (``guard``); ``NotFound``
(404) for another tenant's or an unknown endpoint or delivery.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from lethe.keys.envelope import decrypt_for_subject, encrypt_for_subject
from lethe.vault.clock import from_db, to_db, utcnow
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.errors import FeatureUnavailable, InvalidCommand, NotFound, OutOfScope
from lethe.vault.model import Caller, Role
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import webhook_attempts, webhook_deliveries, webhook_endpoints, webhook_events
from lethe.vault.store.tenancy import for_caller
from lethe.vault.webhooks.events import EVENT_TYPES
from lethe.vault.webhooks.guard import DestinationRule

PREFIX = "whsec_"
MAX_ENDPOINTS = 20  # per tenant


@dataclass(frozen=True)
class Endpoint:
    id: str
    tenant_id: str
    url: str
    events: tuple[str, ...]
    created_at: datetime
    created_by: str


@dataclass(frozen=True)
class Attempt:
    n: int
    at: datetime
    status_code: int | None
    outcome: str  # delivered, http_error, refused, timeout, connect_error


@dataclass(frozen=True)
class Delivery:
    id: str
    webhook_id: str  # the event's id: the ``webhook-id`` header of every try
    event_type: str
    state: str  # pending, delivered, failed
    next_attempt_at: datetime | None
    attempts: tuple[Attempt, ...]


def new_secret() -> str:
    return PREFIX + base64.b64encode(os.urandom(32)).decode("ascii")


def check_secret(secret: str) -> str:
    """A supplied secret in Standard Webhooks' form: ``whsec_`` + base64 of 24 to 64 bytes."""
    try:
        raw = (
            base64.b64decode(secret.removeprefix(PREFIX), validate=True) if secret.startswith(PREFIX) else b""
        )
    except binascii.Error:
        raw = b""
    if not 24 <= len(raw) <= 64:
        raise InvalidCommand("a webhook secret is 'whsec_' followed by base64 of 24 to 64 bytes")
    return secret


def _context(tenant_id: str, endpoint_id: str) -> bytes:
    return f"lethe webhook secret v1|{tenant_id}|{endpoint_id}".encode()


def seal_secret(pseudonyms: Pseudonymizer, tenant_id: str, endpoint_id: str, secret: str) -> bytes:
    key = pseudonyms.tenant_secret(tenant_id, "webhook-secret-seal")
    return encrypt_for_subject(key, secret.encode(), _context(tenant_id, endpoint_id))


def open_secret(pseudonyms: Pseudonymizer, tenant_id: str, endpoint_id: str, sealed: bytes) -> str:
    key = pseudonyms.tenant_secret(tenant_id, "webhook-secret-seal")
    return decrypt_for_subject(key, sealed, _context(tenant_id, endpoint_id)).decode()


class WebhookService:
    """Subscriptions and deliveries of the caller's tenant (admins and privacy officers)."""

    def __init__(
        self,
        uow: UnitOfWork,
        pseudonyms: Pseudonymizer,
        rule: DestinationRule,
        clock: Callable[[], datetime] = utcnow,
        *,
        available: bool = True,
    ) -> None:
        """``available``: whether this installation can send (the ``webhooks`` extra)."""
        self.available = available
        self.uow = uow
        self.pseudonyms = pseudonyms
        self.rule = rule
        self.clock = clock

    @for_caller
    def subscribe(
        self, caller: Caller, url: str, events: Sequence[str], secret: str | None = None
    ) -> tuple[Endpoint, str]:
        """Subscribe ``url`` to ``events``; the endpoint and its secret (shown this once)."""
        _require(caller)
        self._require_available()
        unknown = sorted(set(events) - set(EVENT_TYPES))
        if unknown or not events:
            raise InvalidCommand(f"events are one or more of {', '.join(EVENT_TYPES)}")
        if len(url) > 2048:
            raise InvalidCommand("a webhook URL has at most 2048 characters")
        self.rule.check_url(url)
        secret = check_secret(secret) if secret is not None else new_secret()
        endpoint = Endpoint(
            str(uuid.uuid4()),
            caller.tenant_id,
            url,
            tuple(dict.fromkeys(events)),
            self.clock(),
            caller.principal,
        )
        with self.uow.write() as conn:
            count = conn.execute(
                sa.select(sa.func.count()).where(webhook_endpoints.c.tenant_id == caller.tenant_id)
            ).scalar_one()
            if count >= MAX_ENDPOINTS:
                raise InvalidCommand(f"a tenant has at most {MAX_ENDPOINTS} webhook endpoints")
            conn.execute(
                webhook_endpoints.insert().values(
                    id=endpoint.id,
                    tenant_id=endpoint.tenant_id,
                    url=url,
                    events=json.dumps(list(endpoint.events)),
                    sealed_secret=seal_secret(self.pseudonyms, caller.tenant_id, endpoint.id, secret),
                    created_by=caller.principal,
                    created_at=to_db(endpoint.created_at),
                )
            )
        return endpoint, secret

    @for_caller
    def list(self, caller: Caller) -> list[Endpoint]:
        _require(caller)
        t = webhook_endpoints
        with self.uow.read() as conn:
            rows = conn.execute(
                sa.select(t).where(t.c.tenant_id == caller.tenant_id).order_by(t.c.created_at, t.c.id)
            ).all()
        return [
            Endpoint(
                r.id, r.tenant_id, r.url, tuple(json.loads(r.events)), from_db(r.created_at), r.created_by
            )
            for r in rows
        ]

    @for_caller
    def delete(self, caller: Caller, endpoint_id: str) -> None:
        """Unsubscribe: the endpoint, its sealed secret and its deliveries go; nothing more is sent."""
        _require(caller)
        with self.uow.write() as conn:
            self._endpoint(conn, caller.tenant_id, endpoint_id)
            ids = sa.select(webhook_deliveries.c.id).where(
                webhook_deliveries.c.tenant_id == caller.tenant_id,
                webhook_deliveries.c.endpoint_id == endpoint_id,
            )
            conn.execute(webhook_attempts.delete().where(webhook_attempts.c.delivery_id.in_(ids)))
            conn.execute(
                webhook_deliveries.delete().where(webhook_deliveries.c.id.in_(ids.scalar_subquery()))
            )
            conn.execute(webhook_endpoints.delete().where(webhook_endpoints.c.id == endpoint_id))

    @for_caller
    def deliveries(self, caller: Caller, endpoint_id: str, limit: int = 100) -> builtins.list[Delivery]:
        """The endpoint's newest deliveries first, each with its attempts (status code, time)."""
        _require(caller)
        d, a = webhook_deliveries, webhook_attempts
        with self.uow.read() as conn:
            self._endpoint(conn, caller.tenant_id, endpoint_id)
            rows = conn.execute(
                sa.select(d, webhook_events.c.type)
                .join(webhook_events, webhook_events.c.id == d.c.event_id)
                .where(d.c.tenant_id == caller.tenant_id, d.c.endpoint_id == endpoint_id)
                .order_by(d.c.created_at.desc(), d.c.id)
                .limit(limit)
            ).all()
            tries = (
                conn.execute(
                    sa.select(a).where(a.c.delivery_id.in_([r.id for r in rows])).order_by(a.c.n)
                ).all()
                if rows
                else []
            )
        by_delivery: dict[str, list[Attempt]] = {}
        for t in tries:
            by_delivery.setdefault(t.delivery_id, []).append(
                Attempt(t.n, from_db(t.at), t.status_code, t.outcome)
            )
        return [
            Delivery(
                r.id,
                r.event_id,
                r.type,
                r.state,
                from_db(r.next_attempt_at) if r.state == "pending" else None,
                tuple(by_delivery.get(r.id, ())),
            )
            for r in rows
        ]

    @for_caller
    def replay(self, caller: Caller, endpoint_id: str, delivery_id: str) -> None:
        """Send a delivery again, now, with the same ``webhook-id`` (whatever its state)."""
        _require(caller)
        self._require_available()
        d = webhook_deliveries
        with self.uow.write() as conn:
            self._endpoint(conn, caller.tenant_id, endpoint_id)
            done = conn.execute(
                d.update()
                .where(
                    d.c.id == delivery_id, d.c.tenant_id == caller.tenant_id, d.c.endpoint_id == endpoint_id
                )
                .values(state="pending", next_attempt_at=to_db(self.clock()))
                .returning(d.c.id)
            ).first()
            if done is None:
                raise NotFound("webhook delivery not found")

    def _require_available(self) -> None:
        if not self.available:
            raise FeatureUnavailable(
                "this installation cannot send webhooks: install the webhooks extra into the "
                "server's environment (from its checkout: pip install -e '.[webhooks]')"
            )

    @staticmethod
    def _endpoint(conn: sa.Connection, tenant_id: str, endpoint_id: str) -> None:
        t = webhook_endpoints
        found = conn.execute(
            sa.select(t.c.id).where(t.c.id == endpoint_id, t.c.tenant_id == tenant_id)
        ).first()
        if found is None:
            raise NotFound("webhook endpoint not found")


def _require(caller: Caller) -> None:
    if caller.role not in (Role.ADMIN, Role.PRIVACY_OFFICER):
        raise OutOfScope("only an admin or a privacy officer manages webhooks")
