"""A webhook receiver for tests: a small local HTTP server that verifies every delivery with
the ``standardwebhooks`` library and processes each ``webhook-id`` once (de-duplicating).

``fail_first``: answer 500 to that many requests first; ``redirect_to``: answer every request
with a 302 to that URL; ``accepting``: False answers 500 to everything (a receiver that is down).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook


@dataclass
class Delivery:
    webhook_id: str
    body: bytes
    headers: dict[str, str]
    verified: bool
    status: int

    @property
    def event(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Receiver:
    host: str = "127.0.0.1"
    secret: str | None = None
    fail_first: int = 0
    redirect_to: str | None = None
    accepting: bool = True
    received: list[Delivery] = field(default_factory=list)
    processed: list[Delivery] = field(default_factory=list)  # the first 2xx of each webhook-id
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://{self.host}:{self._server.server_address[1]}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                status = receiver.handle(body, {k.lower(): v for k, v in self.headers.items()})
                self.send_response(status)
                if status == 302 and receiver.redirect_to:
                    self.send_header("Location", receiver.redirect_to)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def handle(self, body: bytes, headers: dict[str, str]) -> int:
        with self._lock:
            verified = True
            try:
                assert self.secret is not None
                Webhook(self.secret).verify(body, headers)
            except Exception:
                verified = False
            if self.redirect_to:
                status = 302
            elif not self.accepting or len(self.received) < self.fail_first:
                status = 500
            elif not verified:
                status = 401
            else:
                status = 200
            webhook_id = headers.get("webhook-id", "")
            delivery = Delivery(webhook_id, body, headers, verified, status)
            self.received.append(delivery)
            if status == 200 and all(p.webhook_id != webhook_id for p in self.processed):
                self.processed.append(delivery)  # de-duplicated: a repeat is acknowledged, not processed
            return status

    def of_type(self, kind: str) -> list[Delivery]:
        return [d for d in self.processed if d.event["type"] == kind]

    def ids_per_event(self) -> dict[str, set[str]]:
        """Each distinct event (its body without the header time) -> the webhook-ids it came under."""
        ids: dict[str, set[str]] = {}
        for d in self.received:
            ids.setdefault(d.body.decode(), set()).add(d.webhook_id)
        return ids

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
