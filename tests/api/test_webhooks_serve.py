"""Webhooks from a real ``lethe serve`` (SQLite and PostgreSQL): each event keeps one
``webhook-id`` across a restart of the server, and across two nodes on one PostgreSQL, and a
de-duplicating receiver processes it once.

The receiver is down (500) while the erasure runs; the server is stopped with deliveries
still pending, the receiver comes back, and a new server on the same store delivers them.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import bearer, serve_with_tokens
from tests.api.test_serve import start_server
from tests.webhook_receiver import Receiver

FAST = {
    "LETHE_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on loopback
    "LETHE_WEBHOOK_INTERVAL_SECONDS": "0.2",
    "LETHE_WEBHOOK_RETRY_BASE_SECONDS": "0.2",
    "LETHE_WEBHOOK_MAX_ATTEMPTS": "30",
}


def wait_for(what: str, done: Callable[[], bool], seconds: float = 60) -> None:
    """Poll until ``done``; a bound on waiting, not a claim about speed."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    if request.param == "sqlite":
        yield dict(FAST)
        return
    pg = request.getfixturevalue("postgres")
    url = pg.create()
    yield {**FAST, "LETHE_DATABASE_URL": url}
    pg.drop(url)


def test_each_event_keeps_one_webhook_id_across_a_restart(tmp_path: Path, store_env: dict[str, str]) -> None:
    receiver = Receiver(accepting=False).start()
    served = serve_with_tokens(tmp_path, store_env)
    second = None
    try:
        officer = bearer(served.tokens["privacy_officer"])
        with httpx.Client(base_url=served.url, timeout=30) as http:
            hook = http.post("/v1/admin/webhooks", json={"url": receiver.url, "events": [
                "erasure.status_changed", "erasure.reported"]}, headers=officer).json()  # fmt: skip
            receiver.secret = hook["secret"]
            body = {"subject_id": f"{uuid.uuid4()}@example.com", "legal_basis": "gdpr-art17-1a"}
            assert http.post("/v1/erasure-requests", json=body, headers=officer).status_code == 202
        wait_for("the certificate's event, refused", lambda: any(
            d.event["type"] == "erasure.reported" for d in receiver.received))  # fmt: skip
        served.server.stop()
        before = {d.webhook_id for d in receiver.received}
        assert receiver.processed == []

        receiver.accepting = True
        second = start_server(tmp_path, store_env)
        deliveries = f"{second.url}/v1/admin/webhooks/{hook['id']}/deliveries"

        def all_delivered() -> bool:
            items = httpx.get(deliveries, headers=officer, timeout=30).json()["items"]
            return bool(items) and all(i["state"] == "delivered" for i in items)

        wait_for("every delivery", all_delivered)
    finally:
        served.server.stop()
        if second is not None:
            second.stop()
        receiver.stop()

    assert all(d.verified for d in receiver.received)
    assert all(len(ids) == 1 for ids in receiver.ids_per_event().values())  # one id per event, every try
    processed = [d.webhook_id for d in receiver.processed]
    assert before <= set(processed) and len(processed) == len(set(processed))
    assert {d.event["type"] for d in receiver.processed} == {"erasure.status_changed", "erasure.reported"}


def test_two_nodes_send_each_event_once_under_one_webhook_id(tmp_path: Path, postgres: Any) -> None:
    """Two ``lethe serve`` nodes (own data dirs, the same keys, one PostgreSQL) share the outbox:
    every try the receiver gets is an attempt the deliveries list records (no two senders
    send one delivery at once), each event keeps one webhook-id through its retries, and a
    de-duplicating receiver processes it once."""
    url = postgres.create()
    env = {**FAST, "LETHE_DATABASE_URL": url}
    receiver = Receiver(fail_first=3).start()
    nodes = []
    try:
        served = serve_with_tokens(tmp_path / "a", env)
        nodes.append(served.server)
        shutil.copytree(
            tmp_path / "a" / "data" / "keys", tmp_path / "b" / "data" / "keys"
        )  # one pepper, one key
        nodes.append(start_server(tmp_path / "b", env))
        officer = bearer(served.tokens["privacy_officer"])
        a, b = (httpx.Client(base_url=n.url, timeout=30, headers=officer) for n in nodes)
        events = ["erasure.status_changed", "erasure.reported"]
        hook = a.post("/v1/admin/webhooks", json={"url": receiver.url, "events": events}).json()
        receiver.secret = hook["secret"]
        body = {"subject_id": f"{uuid.uuid4()}@example.com", "legal_basis": "gdpr-art17-1a"}
        assert b.post("/v1/erasure-requests", json=body).status_code == 202
        items: list[dict[str, Any]] = []

        def all_delivered() -> bool:
            items[:] = a.get(f"/v1/admin/webhooks/{hook['id']}/deliveries").json()["items"]
            reported = any(i["event_type"] == "erasure.reported" for i in items)
            return reported and all(i["state"] == "delivered" for i in items)

        wait_for("every delivery", all_delivered)
    finally:
        for node in nodes:
            node.stop()
        receiver.stop()
        postgres.drop(url)

    assert len(receiver.received) == sum(len(i["attempts"]) for i in items) >= len(items) + 3
    assert all(d.verified for d in receiver.received)
    assert all(len(ids) == 1 for ids in receiver.ids_per_event().values())
    processed = [d.webhook_id for d in receiver.processed]
    assert len(processed) == len(set(processed)) == len(items)
