"""The delivery worker: sends the outbox's pending deliveries, at least once, with backoff.

Every server worker on every node runs ``Dispatcher.run_due`` on a short interval. A
delivery is sent by whoever leases it first (a conditional UPDATE, so two workers never hold
it at once); the lease lapses after ``LEASE`` if its holder dies mid-send, and another worker
sends it again: at least once, never "at most once". Every send of an event carries the
event's stored id as ``webhook-id`` (``events``), so a receiver that de-duplicates by it
processes each event once, across restarts, workers and nodes.

A 2xx answer marks the delivery ``delivered``. Anything else (an HTTP error, a redirect,
which is never followed, a refused destination, a timeout) is an attempt that failed: the
next is due ``retry_base`` x 2^(attempts-1) later, up to ``max_attempts``, after which the
delivery is ``failed`` (an admin may replay it). Each attempt's status code and time are
recorded, never the response's body.

The worker reads across tenants (``maintenance("webhook delivery")``).

Exceptions: none escape ``run_due`` for one delivery's failure; storage errors do (the
background loop logs their type and retries on its next tick).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import sqlalchemy as sa

from lethe.vault.clock import to_db, utcnow
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.runner_ids import new_runner_id
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import webhook_attempts, webhook_deliveries, webhook_endpoints, webhook_events
from lethe.vault.store.tenancy import maintenance_job
from lethe.vault.webhooks.service import open_secret

LEASE = timedelta(seconds=60)  # longer than one send may take (the sender's timeout is far less)
BATCH = 50


@dataclass(frozen=True)
class Sent:
    """What one attempt got: an HTTP status, or none (``outcome`` says why)."""

    status_code: int | None
    outcome: str  # delivered, http_error, refused, timeout, connect_error

    @property
    def ok(self) -> bool:
        return self.outcome == "delivered"


class Sender(Protocol):
    """Signs and sends one body to one URL (``api.webhooks.sender``); never raises."""

    def send(self, url: str, secret: str, webhook_id: str, body: bytes) -> Sent: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Backoff:
    retry_base: timedelta = timedelta(seconds=10)
    max_attempts: int = 8

    def after(self, attempts: int) -> timedelta:
        return self.retry_base * (1 << max(attempts - 1, 0))


class Dispatcher:
    """Leases due deliveries and sends them through ``sender``; how many were delivered."""

    def __init__(
        self,
        uow: UnitOfWork,
        pseudonyms: Pseudonymizer,
        sender: Sender,
        backoff: Backoff = Backoff(),
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.uow = uow
        self.pseudonyms = pseudonyms
        self.sender = sender
        self.backoff = backoff
        self.clock = clock
        self.worker_id = new_runner_id()

    def close(self) -> None:
        """Close the sender's connections (the container's close)."""
        self.sender.close()

    @maintenance_job("webhook delivery")
    def run_due(self) -> int:
        delivered = 0
        for delivery_id in self._due():
            if self._lease(delivery_id):
                delivered += self._send(delivery_id)
        return delivered

    def _due(self) -> list[str]:
        d = webhook_deliveries
        now = to_db(self.clock())
        with self.uow.read() as conn:
            q = (
                sa.select(d.c.id)
                .where(d.c.state == "pending", d.c.next_attempt_at <= now)
                .where(sa.or_(d.c.lease_until.is_(None), d.c.lease_until < now))
                .order_by(d.c.next_attempt_at)
                .limit(BATCH)
            )
            return list(conn.execute(q).scalars().all())

    def _lease(self, delivery_id: str) -> bool:
        """Take the delivery if it is still due and nobody holds it (one statement: of two
        workers, the second finds the row changed and takes nothing)."""
        d = webhook_deliveries
        now = self.clock()
        with self.uow.write() as conn:
            taken = conn.execute(
                d.update()
                .where(d.c.id == delivery_id, d.c.state == "pending", d.c.next_attempt_at <= to_db(now))
                .where(sa.or_(d.c.lease_until.is_(None), d.c.lease_until < to_db(now)))
                .values(lease_owner=self.worker_id, lease_until=to_db(now + LEASE))
                .returning(d.c.id)
            ).first()
        return taken is not None

    def _send(self, delivery_id: str) -> int:
        d, e, ep = webhook_deliveries, webhook_events, webhook_endpoints
        with self.uow.read() as conn:
            row = conn.execute(
                sa.select(
                    d.c.tenant_id,
                    d.c.attempts,
                    d.c.event_id,
                    e.c.payload,
                    ep.c.id,
                    ep.c.url,
                    ep.c.sealed_secret,
                )
                .join(e, e.c.id == d.c.event_id)
                .join(ep, ep.c.id == d.c.endpoint_id)
                .where(d.c.id == delivery_id)
            ).first()
        if row is None:  # the endpoint was deleted meanwhile
            return 0
        secret = open_secret(self.pseudonyms, row.tenant_id, row.id, bytes(row.sealed_secret))
        # The stored body is what is signed and sent, byte for byte, on every attempt.
        sent = self.sender.send(row.url, secret, row.event_id, row.payload.encode())
        self._record(delivery_id, row.tenant_id, sent)
        return 1 if sent.ok else 0

    def _record(self, delivery_id: str, tenant_id: str, sent: Sent) -> None:
        a = webhook_attempts
        now = self.clock()
        with self.uow.write() as conn:
            n = conn.execute(
                sa.select(sa.func.coalesce(sa.func.max(a.c.n), 0) + 1).where(a.c.delivery_id == delivery_id)
            ).scalar_one()
            self._write(conn, delivery_id, tenant_id, n, sent, now)

    def _write(
        self, conn: sa.Connection, delivery_id: str, tenant_id: str, n: int, sent: Sent, now: datetime
    ) -> None:
        """Record attempt ``n`` and what follows it: delivered, the next try, or failed for good.
        Attempts are counted from the recorded ones, so a replay's tries continue the count."""
        if sent.ok:
            state, next_at = "delivered", now
        elif n >= self.backoff.max_attempts:
            state, next_at = "failed", now
        else:
            state, next_at = "pending", now + self.backoff.after(n)
        conn.execute(
            webhook_attempts.insert().values(
                delivery_id=delivery_id,
                n=n,
                tenant_id=tenant_id,
                at=to_db(now),
                status_code=sent.status_code,
                outcome=sent.outcome,
            )
        )
        d = webhook_deliveries
        conn.execute(
            d.update()
            .where(d.c.id == delivery_id)
            .values(
                state=state, attempts=n, next_attempt_at=to_db(next_at), lease_owner=None, lease_until=None
            )
        )
