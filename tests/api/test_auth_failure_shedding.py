"""The failed-authentication limit sheds the lookups, not only the answers.

Past ``auth_failure_rate_limit`` an address's requests with a token this process has not
accepted before get 429 without a database lookup (lookups by token hash are counted at the
driver); a token it accepted before keeps working from the same address (agents behind a
shared NAT are not locked out by a noisy neighbour). The same holds on ``/mcp`` and at the
console's sign-in (SQLite and PostgreSQL, in-process app).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

import lethe.vault.access.token_repository as token_module  # where the token lookup reads
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.model import Role
from lethe.vault.store import driver_reads
from tests.api.conftest import api_settings, bearer

LIMIT = 30
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class CountingReads:
    """``store.driver_reads`` as the token service sees it, counting lookups by token hash."""

    def __init__(self) -> None:
        self.lookups = 0

    def first(self, conn: Any, stmt: Any, params: Any) -> Any:
        if "digest" in params:
            self.lookups += 1
        return driver_reads.first(conn, stmt, params)


@pytest.fixture
def client(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    app = create_app(
        api_settings(settings, auth_failure_rate_limit=f"{LIMIT}/minute", public_url="http://testserver")
    )
    with TestClient(app) as c:
        yield c


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> CountingReads:
    counting = CountingReads()
    monkeypatch.setattr(token_module, "driver_reads", counting)
    return counting


def listing(client: TestClient, token: str) -> int:
    return client.post("/v1/memories/list", json={}, headers=bearer(token)).status_code


def unknown_token() -> str:
    return "lethe_" + secrets.token_urlsafe(32)


def test_bad_tokens_past_the_limit_cost_no_lookup_and_an_accepted_token_keeps_working(
    client: TestClient, reads: CountingReads
) -> None:
    tokens = client.app.state.tokens  # type: ignore[attr-defined]
    accepted, _ = tokens.create(Role.AGENT, "t1", "a1", ["support"])
    assert listing(client, accepted) == 200
    fresh, _ = tokens.create(Role.AGENT, "t1", "a2", ["support"])  # valid, never presented
    reads.lookups = 0

    statuses = [listing(client, unknown_token()) for _ in range(100)]
    assert statuses == [401] * LIMIT + [429] * (100 - LIMIT)
    assert reads.lookups == LIMIT  # main: 100, one per bad token

    assert listing(client, accepted) == 200
    # A refusal of an accepted token (a purpose it lacks) looks it up again, and it stays accepted.
    other_purpose = {"query": "tea", "purpose": "billing"}
    assert client.post("/v1/memories/search", json=other_purpose, headers=bearer(accepted)).status_code == 403
    assert listing(client, accepted) == 200
    before = reads.lookups
    assert listing(client, fresh) == 429  # unseen: shed too
    assert (
        client.post(
            "/v1/memories/search", json={"query": "tea", "purpose": "support"}, headers=bearer(fresh)
        ).status_code
        == 429
    )
    assert reads.lookups == before


def test_past_the_limit_mcp_and_the_console_sign_in_shed_unseen_tokens_too(
    client: TestClient, reads: CountingReads
) -> None:
    tokens = client.app.state.tokens  # type: ignore[attr-defined]
    auditor, _ = tokens.create(Role.AUDITOR, "t1")
    mcp = {**MCP_HEADERS, **bearer(auditor)}
    assert client.post("/mcp", json=LIST_TOOLS, headers=mcp).status_code == 200
    for _ in range(LIMIT):
        assert listing(client, unknown_token()) == 401
    reads.lookups = 0

    unseen = client.post("/mcp", json=LIST_TOOLS, headers={**MCP_HEADERS, **bearer(unknown_token())})
    assert unseen.status_code == 429 and int(unseen.headers["retry-after"]) > 0
    form = client.get("/console/sign-in")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf is not None
    signed = client.post("/console/sign-in", data={"token": unknown_token(), "csrf_token": csrf.group(1)})
    assert signed.status_code == 429
    assert reads.lookups == 0

    assert client.post("/mcp", json=LIST_TOOLS, headers=mcp).status_code == 200  # accepted: served
