"""Fault: the rate limits' Redis stopped, then stalled, while clients keep a `lethe serve` busy.

docs/operations.md ("Several nodes") promises: with Redis away, every request that needs a
rate-limit decision is answered 503 (a problem document, ``Retry-After: 1``) within about a
second, never let through unlimited and never a 500; ``/readyz`` names the failed check;
and requests recover, limits included, as soon as Redis answers again.

Setup: one node (SQLite store, local KMS) counting its limits in a private Redis
(``private_redis``), limit 50 requests per token per 10 s; three clients, each with its own
token, write and search at about 3 requests a second (under the limit). Redis is killed for
4 s, restarted, then stalled (SIGSTOP) for 4 s. A burst of 60 requests checks that the limit
bites before and after (a fresh token each time: a restarted Redis that keeps nothing on
disk has forgotten the counts, which the test does not rely on either way).
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.children import clean_env
from tests.torture.cluster import Node, PrivateRedis, init_nodes, lethe
from tests.torture.service_faults import PROBLEM, Answers, Tally, tally_for
from tests.torture.stack import memory_body

pytestmark = pytest.mark.slow

LIMIT, WINDOW = 50, 10  # requests per token per WINDOW seconds
CLIENTS = 3
PACE = 0.3  # seconds between one client's requests: 3.3/s, 33 per window, under the limit
OUTAGE_SECONDS = 4.0
DEGRADED_WITHIN = 3.0  # "within about a second", with room for two busy shared cores


def admin_token(env: dict[str, str], data_dir: Path, tenant: str) -> str:
    r = lethe(env, data_dir, "token", "create", "--tenant", tenant, "--role", "admin", "--json")
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stdout)["token"])


def agent_tokens(node: Node, admin: str, n: int) -> list[str]:
    """``n`` agent tokens, minted over HTTP (a CLI process each would take seconds)."""
    body = {"role": "agent", "agent_id": "a1", "purposes": ["support"]}
    with client(node, admin) as http:
        minted = [http.post("/v1/admin/tokens", json=body, timeout=30) for _ in range(n)]
    assert all(r.status_code == 201 for r in minted), [r.text for r in minted]
    return [str(r.json()["token"]) for r in minted]


def client(node: Node, token: str) -> httpx.Client:
    return httpx.Client(base_url=node.url, headers={"Authorization": f"Bearer {token}"})


class Load:
    """``CLIENTS`` agents writing and searching, each at ``PACE``, until stopped."""

    def __init__(self, node: Node, tokens: list[str], answers: Answers) -> None:
        self.stop = threading.Event()
        self.answers = answers
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(node, t), daemon=True) for t in tokens]

    def _run(self, node: Node, token: str) -> None:
        try:
            with client(node, token) as http:
                n = 0
                while not self.stop.is_set():
                    n += 1
                    if n % 2:
                        body = memory_body(f"redis-{n % 5}", f"note {n} {uuid.uuid4().hex[:6]}")
                        self.answers.send(http, "POST", "/v1/memories", json=body)
                    else:
                        body = {"query": "note", "purpose": "support", "limit": 5}
                        self.answers.send(http, "POST", "/v1/memories/search", json=body)
                    self.stop.wait(PACE)
        except BaseException as exc:  # surfaced when the load stops
            self.errors.append(exc)

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)
        assert not self.errors, self.errors


def burst(node: Node, token: str, n: int = LIMIT + 10) -> Counter[int]:
    """``n`` quick reads of an unknown memory (404 once admitted): what the limiter answered."""
    seen: Counter[int] = Counter()
    with client(node, token) as http:
        for _ in range(n):
            r = http.get(f"/v1/memories/{uuid.uuid4()}", timeout=30)
            seen[r.status_code] += 1
            if r.status_code in (429, 503):
                assert r.headers["content-type"].startswith(PROBLEM) and "retry-after" in r.headers
    return seen


def readyz(node: Node) -> httpx.Response:
    return httpx.get(f"{node.url}/readyz", timeout=30)


def back_within(node: Node, t: Tally, how: str) -> None:
    """Wait for ``/readyz`` to answer 200 again, and note how long it took."""
    back = time.monotonic()
    while readyz(node).status_code != 200:
        assert time.monotonic() - back < 30, f"the node stayed unready after Redis {how}"
        time.sleep(0.1)
    t.notes.append(f"/readyz 200 {time.monotonic() - back:.2f} s after Redis {how}")


def test_a_redis_outage_under_load_answers_503_never_500_and_limits_return(
    private_redis: PrivateRedis, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> None:
    t = tally_for(request, "Redis stopped under load")
    a = t.answers
    env = clean_env(
        LETHE_RATE_LIMIT_STORAGE=private_redis.url,
        LETHE_RATE_LIMIT=f"{LIMIT}/{WINDOW} seconds",
        LETHE_AUTH_FAILURE_RATE_LIMIT="1000/minute",
    )
    (node,) = init_nodes(tmp_path_factory.mktemp("redis-fault"), env, ["node"])
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    admin = admin_token(env, node.data_dir, tenant)
    node.start()
    try:
        *load_tokens, before_token, during_token, after_token = agent_tokens(node, admin, CLIENTS + 3)
        with Load(node, load_tokens, a):
            time.sleep(2)
            seen = burst(node, before_token)
            t.check(seen[429] >= 10 and set(seen) <= {404, 429}, "the limit bites before the outage", seen)

            a.phase = "redis down"
            private_redis.stop()
            t.faults["Redis stopped"] += 1
            time.sleep(1)
            ready = readyz(node)
            t.check(
                ready.status_code == 503 and "rate limit storage" in ready.text,
                "/readyz names the rate limit storage while Redis is down",
                ready.text,
            )
            seen = burst(node, during_token, 20)
            t.check(
                seen == Counter({503: 20}), "a token is refused 503 while Redis is down (fails closed)", seen
            )
            time.sleep(max(0.0, OUTAGE_SECONDS - 2))

            a.phase = "redis back"
            private_redis.start()
            back_within(node, t, "restarted")
            a.phase = "after"
            time.sleep(2)

            a.phase = "redis stalled"  # SIGSTOP: connections hang rather than fail
            private_redis.signal(signal.SIGSTOP)
            t.faults["Redis stalled (SIGSTOP)"] += 1
            try:
                time.sleep(OUTAGE_SECONDS)
            finally:
                private_redis.signal(signal.SIGCONT)
            a.phase = "redis back"
            back_within(node, t, "resumed")
            a.phase = "after"
            time.sleep(2)
        seen = burst(node, after_token)
        t.check(seen[429] >= 10 and set(seen) <= {404, 429}, "the limit bites again after the outage", seen)
    finally:
        node.stop()

    down, after = a.by_phase.get("redis down", Counter()), a.by_phase.get("after", Counter())
    t.check(not a.server_errors, "no answer was a 500 (or a 503 that is not a problem)", a.server_errors)
    t.check(not a.hangs, "no request hung", a.hangs)
    t.check(down and set(down) == {503}, "every load request during the outage was answered 503", down)
    stalled = a.by_phase.get("redis stalled", Counter())
    t.check(
        stalled and set(stalled) == {503},
        "every load request while Redis was stalled was answered 503",
        stalled,
    )
    slowest = max(a.slowest["redis down"], a.slowest["redis stalled"])
    t.check(slowest < DEGRADED_WITHIN, "outage answers came within about a second", a.slowest)
    t.check(after and set(after) <= {200, 201}, "load requests succeed again once Redis is back", after)
    t.check(not a.total()[429], "the load, under its limit, was never told 429", a.total())
    t.notes.append(f"slowest answer by phase { ({p: round(s, 2) for p, s in a.slowest.items()}) }")
