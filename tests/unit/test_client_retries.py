"""The client's retry and error rules, over an in-memory transport (httpx.MockTransport).

Retries resend only what is safe: a request that never left, a 429 within ``max_wait``,
and reads or keyed writes whose answer was lost. A keyed write is resent with the same
idempotency key; a POST without a key is never resent once it may have been received.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest

from lethe.client import (
    AsyncLetheClient,
    LetheClient,
    Provenance,
    RateLimited,
    Retries,
    ServerError,
    TransportError,
    Unavailable,
    UnexpectedResponse,
)

FAST = Retries(attempts=3, backoff=0.001, max_wait=2.0)
TOKEN = "lethe_" + "s" * 43
MEMORY = {
    "id": "00000000-0000-0000-0000-000000000001",
    "tenant_id": "t1",
    "agent_id": "a1",
    "subject_ref": "ref",
    "subject_id": "alice",
    "purpose": "support",
    "kind": "fact",
    "content": "x",
    "content_hmac": "h",
    "provenance": {"source_type": "user_statement", "source_ref": "s", "sources": []},
    "authority": "user",
    "trust": "trusted",
    "confidence": 1,
    "created_at": "2026-01-01T00:00:00Z",
    "expires_at": "2027-01-01T00:00:00Z",
    "version": 1,
    "status": "active",
    "supersedes_id": None,
    "idempotency_key": "k",
    "a_field_from_a_newer_server": True,
}


class Script:
    """Answers requests from a list of outcomes: a status (with JSON) or an exception to raise."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        status, body, headers = outcome if isinstance(outcome, tuple) else (outcome, MEMORY, {})
        return httpx.Response(status, json=body, headers=headers)

    def client(self, retries: Retries = FAST) -> LetheClient:
        return LetheClient("http://lethe.test", TOKEN, retries=retries, transport=httpx.MockTransport(self))

    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


def write(c: LetheClient) -> object:
    return c.write_memory("alice", "support", "fact", "x", Provenance("user_statement", "s"))


def test_a_keyed_write_whose_answer_was_lost_is_resent_with_the_same_key() -> None:
    script = Script(httpx.ReadTimeout("lost"), 201)
    item = write(script.client())
    keys = [b["idempotency_key"] for b in script.bodies()]
    assert len(keys) == 2 and keys[0] == keys[1] and item.id == MEMORY["id"]  # type: ignore[attr-defined]


def test_two_logical_writes_never_share_a_key() -> None:
    script = Script(201, 201)
    c = script.client()
    write(c), write(c)
    first, second = (b["idempotency_key"] for b in script.bodies())
    assert first != second


def test_a_post_without_a_key_is_not_resent_once_it_may_have_arrived() -> None:
    script = Script(httpx.ReadTimeout("lost"), 202)
    with pytest.raises(TransportError) as e:
        script.client().request_erasure("alice", "gdpr-art17-1a")
    assert len(script.requests) == 1
    assert "alice" not in str(e.value) and "POST /v1/erasure-requests" in str(e.value)


def test_a_request_that_never_left_is_resent_even_without_a_key() -> None:
    accepted = {
        "id": "j1",
        "status": "received",
        "received_at": "2026-01-01T00:00:00Z",
        "due_at": "2026-01-31T00:00:00Z",
    }
    script = Script(httpx.ConnectError("refused"), (202, accepted, {}))
    assert script.client().request_erasure("alice", "gdpr-art17-1a").id == "j1"
    assert len(script.requests) == 2


def test_a_503_is_retried_for_reads_only() -> None:
    problem = {"title": "Service unavailable", "detail": "KMS down", "status": 503}
    reads = Script((503, problem, {}), 200)
    assert reads.client().get_memory("m1").kind == "fact"
    retract = Script((503, problem, {}), 200)  # an unkeyed write: a lost answer may have applied it
    with pytest.raises(Unavailable):
        retract.client().retract_memories("poisoned", source_ref="https://example.org/x")
    assert len(retract.requests) == 1


def test_a_429_waits_its_retry_after_up_to_max_wait_and_is_raised_beyond() -> None:
    limited = {"title": "Too many requests", "detail": "this token is limited", "status": 429}
    short = Script((429, limited, {"Retry-After": "0"}), 200)
    assert short.client().get_memory("m1").version == 1
    long = Script((429, limited, {"Retry-After": "60"}), 200)
    with pytest.raises(RateLimited) as e:
        long.client().get_memory("m1")
    assert e.value.retry_after == 60 and len(long.requests) == 1


def test_retries_give_up_after_the_last_attempt() -> None:
    script = Script(*[httpx.ConnectError("refused")] * 3)
    with pytest.raises(TransportError):
        script.client().get_memory("m1")
    assert len(script.requests) == 3


def test_other_statuses_and_odd_answers_map_to_their_errors() -> None:
    failing = Script((500, {"title": "Internal error", "detail": "boom", "status": 500}, {}))
    with pytest.raises(ServerError) as e:
        failing.client().get_memory("m")
    assert type(e.value) is ServerError and e.value.status == 500

    def html(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>proxy</html>")

    c = LetheClient("http://lethe.test", TOKEN, transport=httpx.MockTransport(html))
    with pytest.raises(UnexpectedResponse):
        c.get_memory("m1")


def test_the_token_is_sent_as_a_bearer_and_shown_nowhere_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LETHE_TOKEN", TOKEN)
    monkeypatch.setenv("LETHE_URL", "http://from-env.test")
    script = Script(200)
    c = LetheClient(transport=httpx.MockTransport(script), retries=FAST)
    c.get_memory("a/b")
    request = script.requests[0]
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert str(request.url) == "http://from-env.test/v1/memories/a%2Fb"
    assert TOKEN not in repr(c)


def test_the_async_client_follows_the_same_rules() -> None:
    script = Script(httpx.ReadTimeout("lost"), 201)

    async def run() -> None:
        transport = httpx.MockTransport(script)
        async with AsyncLetheClient("http://lethe.test", TOKEN, retries=FAST, transport=transport) as c:
            await c.write_memory("alice", "support", "fact", "x", Provenance("user_statement", "s"))

    asyncio.run(run())
    first, second = (b["idempotency_key"] for b in script.bodies())
    assert first == second


def test_an_operation_is_one_function_shared_by_both_clients() -> None:
    from lethe.client.operations import Operations

    sync_get: Callable[..., object] = LetheClient("http://x", "t").get_memory
    async_get = AsyncLetheClient("http://x", "t").get_memory
    assert sync_get.__wrapped__ is async_get.__wrapped__ is Operations.get_memory.build  # type: ignore[attr-defined]
    assert asyncio.iscoroutinefunction(async_get) and not asyncio.iscoroutinefunction(sync_get)


def test_a_delete_of_an_own_memory_whose_answer_was_lost_is_resent() -> None:
    # The server answers a repeated delete of a retracted memory as the first (204), so a resend is safe.
    script = Script(httpx.ReadTimeout("lost"), (204, None, {}))
    assert script.client().delete_memory("m1") is None
    assert [(r.method, r.url.path) for r in script.requests] == [("DELETE", "/v1/memories/m1")] * 2
