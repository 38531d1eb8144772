"""Sending one signed webhook: Standard Webhooks' signature, the deployment's address rule.

The ``standardwebhooks`` library signs (``webhook-id``, ``webhook-timestamp``,
``webhook-signature`` headers); ``httpx`` sends. Both come with the ``webhooks`` extra and are
imported when the first delivery is sent, so a server without the extra starts and refuses
subscriptions instead (``available``; the service says to install the extra).

Each attempt resolves the host through the rule (``vault.webhooks.guard``), then connects to
the address it checked, carrying the name in ``Host`` and in TLS's SNI (and the certificate is
checked against the name): a DNS answer that changes between check and connection does not
move it. Redirects are not followed (a 3xx is a failed attempt), and the response's body is
never read.

Exceptions: none from ``send``: every outcome is a ``Sent``.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from lethe.vault.clock import utcnow
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.errors import DestinationRefused
from lethe.vault.store.db import UnitOfWork
from lethe.vault.webhooks.delivery import Backoff, Dispatcher, Sent
from lethe.vault.webhooks.guard import DestinationRule, Target
from lethe.vault.webhooks.service import WebhookService

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("lethe.webhooks")
USER_AGENT = "Lethe-Webhooks/1"


def available() -> bool:
    """Whether the ``webhooks`` extra (standardwebhooks, httpx) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("standardwebhooks", "httpx"))


def connect_url(target: Target) -> str:
    """The URL of the attempt: the checked address in place of the name."""
    address = ipaddress.ip_address(target.address)
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"{target.scheme}://{host}:{target.port}{target.path}"


def host_header(target: Target) -> str:
    default = 443 if target.scheme == "https" else 80
    name = f"[{target.host}]" if ":" in target.host else target.host
    return name if target.port == default else f"{name}:{target.port}"


class HttpSender:
    """``vault.webhooks.delivery.Sender`` over httpx, one client per sender (pooled)."""

    def __init__(
        self, rule: DestinationRule, timeout: float = 10.0, transport: httpx.BaseTransport | None = None
    ) -> None:
        """``transport``: httpx's (tests put a recording one in place of the network)."""
        self.rule = rule
        self.timeout = timeout
        self.transport = transport
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            # No proxy from the environment: it would connect to the name, not the checked address.
            self._client = httpx.Client(
                follow_redirects=False, timeout=self.timeout, trust_env=False, transport=self.transport
            )
        return self._client

    def send(self, url: str, secret: str, webhook_id: str, body: bytes) -> Sent:
        from standardwebhooks.webhooks import Webhook

        try:
            target = self.rule.target(url)
        except DestinationRefused:
            return Sent(None, "refused")
        now = utcnow()
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "host": host_header(target),
            "webhook-id": webhook_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": Webhook(secret).sign(webhook_id, now, body),
        }
        return self._post(target, headers, body)

    def _post(self, target: Target, headers: dict[str, str], body: bytes) -> Sent:
        import httpx

        extensions: dict[str, Any] = {"sni_hostname": target.host} if target.scheme == "https" else {}
        client = self._http()
        try:
            request = client.build_request(
                "POST", connect_url(target), headers=headers, content=body, extensions=extensions
            )
            response = client.send(request, stream=True)  # the body is never read
            response.close()
        except httpx.TimeoutException:
            return Sent(None, "timeout")
        except httpx.HTTPError as exc:
            log.info("webhook attempt failed", extra={"error": type(exc).__name__})
            return Sent(None, "connect_error")
        code = response.status_code
        return Sent(code, "delivered" if 200 <= code < 300 else "http_error")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def build_webhooks(
    uow: UnitOfWork,
    pseudonyms: Pseudonymizer,
    *,
    allow_private: bool,
    retry_base_seconds: float,
    max_attempts: int,
    timeout_seconds: float,
) -> tuple[WebhookService, Dispatcher | None]:
    """The admin's service and the delivery worker (None without the extra: nothing to send)."""
    rule = DestinationRule(allow_private=allow_private)
    service = WebhookService(uow, pseudonyms, rule, available=available())
    if not service.available:
        return service, None
    backoff = Backoff(timedelta(seconds=retry_base_seconds), max_attempts)
    return service, Dispatcher(uow, pseudonyms, HttpSender(rule, timeout_seconds), backoff)
